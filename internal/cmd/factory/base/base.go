// Package base builds the production [cmdenv.Factory] every koshactl
// program shares: the real config file, the DynamoDB store of the selected
// context (or the embedded one, through the Factory's OpenLocal, which only
// the full program links: internal/cmd/factory), the AWS configuration and
// caller identity. Everything is built on first use.
package base

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// New returns the production factory on the process's streams.
func New() *cmdenv.Factory {
	return NewWith(iostreams.System(), clock.Real{})
}

// An Option changes how [NewWith] wires the factory.
type Option func(*wiring)

// wiring is what the options set: the factory, and how it is built.
type wiring struct {
	f *cmdenv.Factory
	// quiet leaves out the config file's permission warning.
	quiet bool
}

// WithEnviron makes the factory and its commands read environ instead of the
// process environment ([cmdutil.Environ] lists what that covers). In-process
// tests give each CLI its own, so they need no process-wide variable and can
// run in parallel.
func WithEnviron(environ cmdutil.Environ) Option {
	return func(w *wiring) { w.f.Environ = environ }
}

// WithLocalStore makes local contexts open their store with open (the
// embedded store: the full program's wiring passes sqlite's).
func WithLocalStore(open func(ctx context.Context, path string) (store.Store, error)) Option {
	return func(w *wiring) { w.f.OpenLocal = open }
}

// WithoutPermissionWarning leaves out the warning about a config file others
// may read: the front said it already before it handed the run over.
func WithoutPermissionWarning() Option {
	return func(w *wiring) { w.quiet = true }
}

// ErrLocalStore reports a local context in a program that does not link the
// embedded store (koshactl's front hands such runs to koshactl-full before it
// gets here).
var ErrLocalStore = errors.New("this program does not open the embedded store of a local context (koshactl-full does)")

// NewWith returns the production wiring (config file, stores, AWS) on the
// given streams and clock. In-process end-to-end tests use it with buffers and
// a fake clock, so they exercise the real context resolution.
func NewWith(ios *iostreams.IOStreams, clk clock.Clock, opts ...Option) *cmdenv.Factory {
	f := &cmdenv.Factory{
		IOStreams: ios,
		Clock:     clk,
		Prompter:  &cmdutil.LinePrompter{In: ios.In, Out: ios.ErrOut},
	}
	w := &wiring{f: f}
	for _, o := range opts {
		o(w)
	}
	f.ContextName = f.Environ.Get("KOSHACTL_CONTEXT")
	f.Config = sync.OnceValues(func() (*config.File, error) {
		path, err := config.DefaultPathFrom(f.Environ.Get)
		if err != nil {
			return nil, err
		}
		file, err := config.Load(path)
		if err == nil && !w.quiet {
			// Once per process: Config is loaded once.
			if w := file.PermissionWarning(); w != "" {
				fmt.Fprintf(ios.ErrOut, "warning: %s\n", w)
			}
		}
		return file, err
	})
	var (
		mu  sync.Mutex
		env *cmdenv.Env
	)
	f.Env = func(ctx context.Context) (*cmdenv.Env, error) {
		mu.Lock()
		defer mu.Unlock()
		if env != nil {
			return env, nil
		}
		e, err := Resolve(ctx, f)
		if err == nil {
			env = e // kept once resolved; an error is asked again
		}
		return e, err
	}
	return f
}

// Resolve opens the selected context's store and wires its AWS config and
// actor. It is exported for tools (the sandbox) that resolve a context
// outside a command.
func Resolve(ctx context.Context, f *cmdenv.Factory) (*cmdenv.Env, error) {
	name, c, err := f.SelectedContext()
	if err != nil {
		return nil, err
	}
	stateDir, err := config.StateDirFrom(f.Environ.Get)
	if err != nil {
		return nil, err
	}
	env := &cmdenv.Env{Name: name, Context: c, StateDir: stateDir, Clock: f.Clock, Environ: f.Environ}
	if c.IsLocal() {
		if f.OpenLocal == nil {
			return nil, fmt.Errorf("context %q is local: %w", name, ErrLocalStore)
		}
		s, err := f.OpenLocal(ctx, c.LocalStorePathIn(stateDir))
		if err != nil {
			return nil, fmt.Errorf("open embedded store of context %q: %w", name, err)
		}
		env.Store = s
		setIdentity(env, localIdentity(f))
		// A local store can still name AWS resources (a chaos key in Secrets
		// Manager): region, profile, credentials and endpoints come from the
		// environment and the shared config files.
		loadAWS := sync.OnceValues(func() (aws.Config, error) {
			return awsconf.Load(ctx, debugOptions(f, awsconf.Options{HTTPTimeout: requestTimeout(f, c)}))
		})
		env.AWSConfig = func(context.Context) (aws.Config, error) { return loadAWS() }
	} else {
		if demo := f.Environ.Get(identity.DemoEnv); demo != "" {
			return nil, fmt.Errorf("%w: $%s names %s, and context %q is not local: who acts on its table is what STS says; unset it",
				identity.ErrDemoNotLocal, identity.DemoEnv, textsafe.Quote(demo), name)
		}
		d := c.Store.DynamoDB
		awsOpts := debugOptions(f, awsconf.Options{Region: d.Region, Profile: d.Profile, EndpointURL: d.EndpointURL, Endpoints: d.Endpoints,
			IMDS: d.IMDS, StaticCredentials: d.StaticCredentials, HTTPTimeout: requestTimeout(f, c)})
		cfg, err := awsconf.Load(ctx, awsOpts)
		if err != nil {
			return nil, fmt.Errorf("context %q: %w", name, err)
		}
		ddb := dynamodb.NewFromConfig(cfg, pinEndpoint[dynamodb.Options](cfg, "DynamoDB", func(o *dynamodb.Options) **string { return &o.BaseEndpoint }))
		env.Store = dynamo.New(ddb, d.Table)
		// Every other client (STS, Secrets Manager, CloudWatch) is built from the
		// same configuration: endpoint-url is one endpoint for all services, and
		// a context's per-service endpoints are among its configuration sources.
		env.AWSConfig = func(context.Context) (aws.Config, error) { return cfg, nil }
		res := identityResolver(name, cfg, aws.ToString(ddb.Options().BaseEndpoint))
		res.Getenv = f.Environ.Get
		if d.StaticCredentials {
			// Dummy credentials have no identity worth asking a local endpoint for.
			res.STS = nil
		}
		resolved := sync.OnceValues(func() (audit.Identity, error) { return res.Resolve(ctx) })
		setIdentity(env, func(context.Context) (audit.Identity, error) { return resolved() })
	}
	env.Kinds = builtin.For(env.Store, f.Clock, name, c)
	env.Notifier = notifier(f, env)
	env.Impact = gaugeenv.Assessor(env, "")
	return env, nil
}

// localIdentity is who acts on a local context: the demo identity
// $KOSHACTL_DEMO_USER names (said once on stderr, with what it is: a
// demonstration), else the asserted, unverified one.
func localIdentity(f *cmdenv.Factory) func(context.Context) (audit.Identity, error) {
	demo := f.Environ.Get(identity.DemoEnv)
	if demo == "" {
		return func(context.Context) (audit.Identity, error) {
			return identity.Resolver{Getenv: f.Environ.Get}.Asserted()
		}
	}
	resolved := sync.OnceValues(func() (audit.Identity, error) {
		u, err := identity.Demo(demo)
		if err != nil {
			return audit.Identity{}, err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "note: %s\n", u.Notice())
		return u.Identity(), nil
	})
	return func(context.Context) (audit.Identity, error) { return resolved() }
}

// identityResolver asks STS where the configuration sends it. The context is
// an endpoint context, where an STS that is not there yields the asserted,
// unverified identity, when its store is not in AWS.
func identityResolver(name string, cfg aws.Config, storeEndpoint string) identity.Resolver {
	client := sts.NewFromConfig(cfg, identity.ClientOptions,
		pinEndpoint[sts.Options](cfg, "STS", func(o *sts.Options) **string { return &o.BaseEndpoint }))
	return identity.Resolver{
		STS:             client,
		Endpoint:        aws.ToString(client.Options().BaseEndpoint),
		Region:          cfg.Region,
		Context:         name,
		AllowUnverified: storeEndpoint != "" && !awsconf.IsAWSEndpoint(storeEndpoint),
	}
}

// requestTimeout is the bound of one AWS request: --request-timeout, else
// the context's request-timeout, else zero (awsconf's default).
func requestTimeout(f *cmdenv.Factory, c *config.Context) time.Duration {
	return cmp.Or(f.RequestTimeout, c.RequestTimeout.Std())
}

// debugOptions turns on awsconf's operation log on stderr under --debug.
func debugOptions(f *cmdenv.Factory, o awsconf.Options) awsconf.Options {
	if f.Debug {
		o.Debug, o.Clock = f.IOStreams.ErrOut, f.Clock
	}
	return o
}

// pinEndpoint returns a client option that sets the client's endpoint to the
// one the context names for the service, if any, so that it wins even over
// AWS_ENDPOINT_URL (which the SDK otherwise prefers to per-service
// configuration sources).
func pinEndpoint[O any](cfg aws.Config, sdkID string, field func(*O) **string) func(*O) {
	return func(o *O) {
		if ep, ok := awsconf.ServiceEndpoint(cfg, sdkID); ok {
			*field(o) = aws.String(ep)
		}
	}
}

// setIdentity wires env's Identity and Actor to resolve.
func setIdentity(env *cmdenv.Env, resolve func(context.Context) (audit.Identity, error)) {
	env.Identity = resolve
	env.Actor = func(ctx context.Context) (string, error) {
		id, err := resolve(ctx)
		return id.Actor, err
	}
}
