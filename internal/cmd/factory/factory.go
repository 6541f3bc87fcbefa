// Package factory builds the production [cmdutil.Factory]: the real config
// file, the embedded or DynamoDB store of the selected context, the AWS
// configuration and caller identity. Everything is built on first use.
package factory

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// New returns the production factory on the process's streams.
func New() *cmdutil.Factory {
	return NewWith(iostreams.System(), clock.Real{})
}

// NewWith returns the production wiring (config file, stores, AWS) on the
// given streams and clock. In-process end-to-end tests use it with buffers and
// a fake clock, so they exercise the real context resolution.
func NewWith(io *iostreams.IOStreams, clk clock.Clock) *cmdutil.Factory {
	f := &cmdutil.Factory{
		IOStreams:   io,
		Clock:       clk,
		Prompter:    &cmdutil.LinePrompter{In: io.In, Out: io.ErrOut},
		ContextName: os.Getenv("KOSHACTL_CONTEXT"),
	}
	f.Config = sync.OnceValues(func() (*config.File, error) {
		path, err := config.DefaultPath()
		if err != nil {
			return nil, err
		}
		return config.Load(path)
	})
	var (
		mu  sync.Mutex
		env *cmdutil.Env
	)
	f.Env = func(ctx context.Context) (*cmdutil.Env, error) {
		mu.Lock()
		defer mu.Unlock()
		if env != nil {
			return env, nil
		}
		e, err := Resolve(ctx, f)
		if err != nil {
			return nil, err
		}
		env = e
		return env, nil
	}
	return f
}

// Resolve opens the selected context's store and wires its AWS config and
// actor. It is exported for tools (the sandbox) that resolve a context
// outside a command.
func Resolve(ctx context.Context, f *cmdutil.Factory) (*cmdutil.Env, error) {
	file, err := f.Config()
	if err != nil {
		return nil, err
	}
	name := f.ContextName
	if name == "" {
		name = file.Current()
	}
	c, err := file.Context(name)
	if err != nil {
		return nil, err
	}
	stateDir, err := config.StateDir()
	if err != nil {
		return nil, err
	}
	env := &cmdutil.Env{Name: name, Context: c, StateDir: stateDir}
	if c.IsLocal() {
		path, err := c.LocalStorePath()
		if err != nil {
			return nil, err
		}
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("open embedded store of context %q: %w", name, err)
		}
		env.Store = s
		env.Actor = localActor
		// A local store can still name AWS resources (a chaos key in Secrets
		// Manager): region, profile and credentials come from the environment.
		loadAWS := sync.OnceValues(func() (aws.Config, error) { return awsconf.Load(ctx, awsconf.Options{}) })
		env.AWSConfig = func(context.Context) (aws.Config, error) { return loadAWS() }
		return env, nil
	}
	d := c.Store.DynamoDB
	awsOpts := awsconf.Options{Region: d.Region, Profile: d.Profile, EndpointURL: d.EndpointURL, IMDS: d.IMDS,
		StaticCredentials: d.StaticCredentials}
	loadAWS := sync.OnceValues(func() (aws.Config, error) { return awsconf.Load(ctx, awsOpts) })
	cfg, err := loadAWS()
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", name, err)
	}
	env.Store = dynamo.NewFromConfig(cfg, d.Table)
	// The endpoint URL is DynamoDB's (dynalite, DynamoDB Local): other
	// services (STS, Secrets Manager, CloudWatch) keep their own endpoints.
	env.AWSConfig = func(context.Context) (aws.Config, error) {
		c, err := loadAWS()
		c = c.Copy()
		c.BaseEndpoint = nil
		return c, err
	}
	identity := sync.OnceValues(func() (string, error) {
		if d.StaticCredentials {
			// Dummy credentials have no identity worth asking a local endpoint for.
			return localActor(ctx)
		}
		c, err := env.AWSConfig(ctx)
		if err != nil {
			return "", err
		}
		return callerIdentity(ctx, c)
	})
	env.Actor = func(context.Context) (string, error) { return identity() }
	return env, nil
}

// stsAPI is the one STS call koshactl makes.
type stsAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

var _ stsAPI = (*sts.Client)(nil)

// callerIdentity returns the ARN of the AWS principal acting.
func callerIdentity(ctx context.Context, cfg aws.Config) (string, error) {
	return identityFrom(ctx, sts.NewFromConfig(cfg))
}

func identityFrom(ctx context.Context, api stsAPI) (string, error) {
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("%w: who is acting could not be established (sts GetCallerIdentity: %v); refresh credentials (e.g. aws sso login) and re-run",
			store.ErrCredentials, oneLine(err))
	}
	arn := aws.ToString(out.Arn)
	if err := audit.ValidateActor(arn); err != nil {
		return "", fmt.Errorf("sts GetCallerIdentity answered an identity that cannot be recorded: %w", err)
	}
	return arn, nil
}

// localActor names the operator on a local context: $KOSHACTL_ACTOR when set
// (CI jobs name themselves), else user@host. An actor that is not plain text
// ([audit.ValidateActor]) is refused with exit 2 before anything is written.
func localActor(context.Context) (string, error) {
	if a := os.Getenv("KOSHACTL_ACTOR"); a != "" {
		if err := audit.ValidateActor(a); err != nil {
			return "", cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("$KOSHACTL_ACTOR: %w", err))
		}
		return a, nil
	}
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if v := os.Getenv("USER"); v != "" {
		name = v
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	a := name + "@" + host
	if err := audit.ValidateActor(a); err != nil {
		return "", cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("%w; set $KOSHACTL_ACTOR to name yourself", err))
	}
	return a, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
