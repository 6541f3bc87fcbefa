// Package setcontext implements `koshactl config set-context`: create or
// change a context; only the flags given change it.
package setcontext

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/config/contextview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/mcpserver/sessions"
)

// Options are the flags of set-context. Only flags given change
// the context; the rest keep their value.
type Options struct {
	Name              string
	Table             string
	Region            string
	Profile           string
	EndpointURL       string
	ServiceEndpoints  []string
	IMDS              bool
	StaticCredentials bool
	Local             string
	Protected         bool
	Dependencies      []string
	AddDependencies   []string
	MaxOverride       time.Duration
	ChaosSecretID     string
	ChaosKeyFile      string
	ChaosKeyEnv       string
	ChaosTargets      []string
	ChaosPropagation  time.Duration
	CloudWatchNS      string
	PrometheusURL     string
	RLCapacity        float64
	RLRefill          float64
	NotifyWebhooks    []string
	NotifyWebhookEnvs []string
	NotifyFormat      string
	NotifySNS         []string
	NotifyClear       bool
	NotifyTimeout     time.Duration
	RequestTimeout    time.Duration
	AllowNoNotify     bool
	MCPReadOnly       bool
	MCPMaxSessions    int
	MCPSessionIdle    time.Duration
	MCPProposals      int
	Use               bool

	changed func(string) bool
}

// localDefault is --local's value when given without a path.
const localDefault = "<default>"

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "set-context NAME",
		Short: "Create or change a context",
		Example: heredoc.Doc(`
			koshactl config set-context prod --table kosha-control --region eu-west-1 --profile ops --protected
			koshactl config set-context dev --table kosha-control --region us-east-1 --endpoint-url http://127.0.0.1:8000 --static-credentials
			koshactl config set-context ls --table kosha-control --region us-east-1 --service-endpoint dynamodb=http://127.0.0.1:8000 --service-endpoint sts=http://127.0.0.1:4566
			koshactl config set-context scratch --local ./scratch.db
		`),
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			opts.changed = c.Flags().Changed
			// pflag binds an optional value only as --local=PATH; accept the
			// natural --local PATH too.
			if len(args) == 2 {
				if !c.Flags().Changed("local") || opts.Local != localDefault {
					return cmdutil.Usagef("unexpected argument %q: set-context takes one NAME", args[1])
				}
				opts.Local = args[1]
			}
			return Run(f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Table, "table", "", "DynamoDB table (default "+config.DefaultTable+" for a new DynamoDB context)")
	fl.StringVar(&opts.Region, "region", "", "AWS region")
	fl.StringVar(&opts.Profile, "profile", "", "AWS shared-config profile")
	fl.StringVar(&opts.EndpointURL, "endpoint-url", "", "one endpoint for every AWS service (DynamoDB Local, LocalStack, moto)")
	fl.StringArrayVar(&opts.ServiceEndpoints, "service-endpoint", nil,
		"SERVICE=URL: endpoint for one service ("+strings.Join(config.EndpointServices, ", ")+"); wins over --endpoint-url; SERVICE= removes it")
	fl.BoolVar(&opts.IMDS, "imds", false, "let credentials come from EC2 instance metadata (off: the probe hangs off EC2)")
	fl.BoolVar(&opts.StaticCredentials, "static-credentials", false, "use dummy credentials (local DynamoDB-compatible endpoints only)")
	fl.StringVar(&opts.Local, "local", "", "use the embedded store (optionally at PATH)")
	fl.Lookup("local").NoOptDefVal = localDefault
	fl.BoolVar(&opts.Protected, "protected", false, "require typed confirmation or --yes for every mutation")
	fl.StringSliceVar(&opts.Dependencies, "dependencies", nil, "replace the known dependencies (comma-separated)")
	fl.StringSliceVar(&opts.AddDependencies, "add-dependency", nil, "add known dependencies")
	fl.Var(human.DurationFlag{D: &opts.MaxOverride}, "max-override", "longest override allowed (default 24h)")
	fl.StringVar(&opts.ChaosSecretID, "chaos-secret-id", "", "Secrets Manager secret holding the chaos signing key")
	fl.StringVar(&opts.ChaosKeyFile, "chaos-key-file", "", "file holding the chaos signing key (mode 0600)")
	fl.StringVar(&opts.ChaosKeyEnv, "chaos-key-env", "", "environment variable holding the chaos signing key")
	fl.StringSliceVar(&opts.ChaosTargets, "chaos-targets", nil, "dependencies chaos headers may target")
	fl.Var(human.DurationFlag{D: &opts.ChaosPropagation}, "chaos-propagation-delay",
		"after a Secrets Manager rotation, keep signing with the previous key this long (default 5m; 0s signs with the new key at once)")
	fl.StringVar(&opts.CloudWatchNS, "cloudwatch-namespace", "", "read breaker_state from CloudWatch in this namespace")
	fl.StringVar(&opts.PrometheusURL, "prometheus-url", "", "read breaker_state by scraping this /metrics URL")
	fl.Float64Var(&opts.RLCapacity, "ratelimit-capacity", 0, "token bucket capacity (default 20)")
	fl.Float64Var(&opts.RLRefill, "ratelimit-refill", 0, "token bucket refill per second (default 1)")
	fl.StringArrayVar(&opts.NotifyWebhooks, "notify-webhook", nil, "announce changes by POSTing to this URL (repeatable; kept in the file, never printed)")
	fl.StringArrayVar(&opts.NotifyWebhookEnvs, "notify-webhook-env", nil, "announce changes by POSTing to the URL in this environment variable (repeatable)")
	fl.StringVar(&opts.NotifyFormat, "notify-format", config.WebhookJSON, "format of the webhooks this command adds: json (docs/contracts/notification.md) or slack")
	fl.StringArrayVar(&opts.NotifySNS, "notify-sns", nil, "announce changes on this SNS topic ARN (repeatable; AWS Chatbot reads it)")
	fl.BoolVar(&opts.NotifyClear, "notify-clear", false, "remove the context's notification sinks (before adding any given)")
	fl.Var(human.DurationFlag{D: &opts.NotifyTimeout}, "notify-timeout", "bound on one notification's delivery to all sinks (default 5s, at most 30s)")
	fl.Var(human.DurationFlag{D: &opts.RequestTimeout}, "request-timeout", "bound on one AWS request of this context, each attempt (default 10s; 1s to 1h); the global --request-timeout wins over it")
	fl.BoolVar(&opts.AllowNoNotify, "allow-no-notify", false, "let mutating commands skip their notification with --no-notify")
	fl.BoolVar(&opts.MCPReadOnly, "mcp-read-only", false, "koshactl mcp offers agents the read tools only, no proposal tool (docs/mcp.md)")
	fl.IntVar(&opts.MCPMaxSessions, "mcp-max-sessions", 0, "koshactl mcp --listen: most HTTP sessions open at once (default 32; 1 to 1024)")
	fl.Var(human.DurationFlag{D: &opts.MCPSessionIdle}, "mcp-session-idle-timeout", "koshactl mcp --listen: close an HTTP session idle this long (default 30m; 1m to 24h)")
	fl.IntVar(&opts.MCPProposals, "mcp-proposals-per-hour", 0, fmt.Sprintf("koshactl mcp: most change requests one identity's proposals make in any hour (default %d; 1 to %d)",
		approval.DefaultProposalsPerHour, approval.MaxProposalsPerHour))
	fl.BoolVar(&opts.Use, "use", false, "also make it the current context")
	cmd.MarkFlagsMutuallyExclusive("local", "table")
	cmd.MarkFlagsMutuallyExclusive("local", "endpoint-url")
	cmd.MarkFlagsMutuallyExclusive("local", "service-endpoint")
	cmd.MarkFlagsMutuallyExclusive("cloudwatch-namespace", "prometheus-url")
	return cmd
}

// RunSetContext applies the options and saves the file.
func Run(f *cmdenv.Factory, o *Options) error {
	if err := config.ValidateName(o.Name); err != nil {
		return err
	}
	cur, err := f.Config()
	if err != nil {
		return err
	}
	// Under the config's lock, read afresh: a set-context running at the
	// same time keeps its context, and this one keeps its own.
	var ctx *config.Context
	var existed bool
	file, err := config.Update(cur.Path(), func(file *config.File) error {
		if file.Contexts == nil {
			file.Contexts = map[string]*config.Context{}
		}
		ctx, existed = file.Contexts[o.Name]
		if !existed {
			ctx = &config.Context{}
		}
		ch := o.changed
		awsFlag := ch("table") || ch("region") || ch("profile") || ch("endpoint-url") || ch("service-endpoint") || ch("imds") || ch("static-credentials")
		switch {
		case ch("local"):
			ctx.Store = config.StoreConfig{Local: &config.LocalStore{}}
			if o.Local != localDefault {
				if o.Local == "" {
					return cmdutil.Usagef("--local takes a file path, or no value for the default location")
				}
				ctx.Store.Local.Path = o.Local
			}
		case awsFlag:
			if ctx.Store.DynamoDB == nil {
				ctx.Store = config.StoreConfig{DynamoDB: &config.DynamoDBStore{Table: config.DefaultTable}}
			}
			d := ctx.Store.DynamoDB
			set(ch, "table", &d.Table, o.Table)
			set(ch, "region", &d.Region, o.Region)
			set(ch, "profile", &d.Profile, o.Profile)
			set(ch, "endpoint-url", &d.EndpointURL, o.EndpointURL)
			if err := setServiceEndpoints(d, o.ServiceEndpoints); err != nil {
				return err
			}
			set(ch, "imds", &d.IMDS, o.IMDS)
			set(ch, "static-credentials", &d.StaticCredentials, o.StaticCredentials)
			if d.StaticCredentials && d.StoreEndpoint() == "" {
				return cmdutil.Usagef("--static-credentials is only for local DynamoDB-compatible endpoints: also give --endpoint-url")
			}
		case !existed:
			return cmdutil.Usagef("a new context needs a store: --local [PATH], or --table/--region for DynamoDB")
		}
		set(ch, "protected", &ctx.Protected, o.Protected)
		if ch("dependencies") || ch("add-dependency") {
			deps := ctx.KnownDependencies()
			if ch("dependencies") {
				deps = o.Dependencies
			}
			deps = append(deps, o.AddDependencies...)
			seen := map[string]bool{}
			ctx.Dependencies = nil
			for _, d := range deps {
				if err := breaker.ValidateDependency(d); err != nil {
					return err
				}
				if !seen[d] {
					seen[d] = true
					ctx.Dependencies = append(ctx.Dependencies, d)
				}
			}
		}
		if ch("max-override") {
			// The range is the config's, checked again by Validate and Save;
			// here also 0, which a file reads as "the default".
			if err := config.CheckMaxOverride(o.MaxOverride); err != nil {
				return cmdutil.Usagef("--%v", err)
			}
			ctx.MaxOverride = config.Duration(o.MaxOverride)
		}
		set(ch, "chaos-secret-id", &ctx.Chaos.SecretID, o.ChaosSecretID)
		set(ch, "chaos-key-file", &ctx.Chaos.KeyFile, o.ChaosKeyFile)
		set(ch, "chaos-key-env", &ctx.Chaos.KeyEnv, o.ChaosKeyEnv)
		set(ch, "chaos-targets", &ctx.Chaos.Targets, o.ChaosTargets)
		if ch("chaos-propagation-delay") {
			if o.ChaosPropagation < 0 || o.ChaosPropagation > time.Hour {
				return cmdutil.Usagef("--chaos-propagation-delay %s is out of range: give 0s to 1h (the data plane's key cache TTL, 5m for the Lambda extension)", human.Duration(o.ChaosPropagation))
			}
			d := config.Duration(o.ChaosPropagation)
			ctx.Chaos.PropagationDelay = &d
		}
		if ch("cloudwatch-namespace") {
			ctx.Metrics = config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{Namespace: o.CloudWatchNS}}
		}
		if ch("prometheus-url") {
			ctx.Metrics = config.MetricsConfig{Prometheus: &config.PrometheusMetrics{URL: o.PrometheusURL}}
		}
		if ch("ratelimit-capacity") {
			if o.RLCapacity < 1 {
				return cmdutil.Usagef("--ratelimit-capacity %g is below 1: a bucket must hold at least one token", o.RLCapacity)
			}
			ctx.RateLimit.Capacity = o.RLCapacity
		}
		if ch("ratelimit-refill") {
			if o.RLRefill <= 0 {
				return cmdutil.Usagef("--ratelimit-refill %g is not positive: give tokens per second, like 1", o.RLRefill)
			}
			ctx.RateLimit.RefillPerSecond = o.RLRefill
		}
		if err := setNotify(ctx, o); err != nil {
			return err
		}
		if err := ctx.Validate(o.Name); err != nil {
			return cmdutil.UsageError(err)
		}
		file.Contexts[o.Name] = ctx
		if o.Use {
			file.CurrentContext = o.Name
		}
		return nil
	})
	if err != nil {
		return err
	}
	verb := "Created"
	if existed {
		verb = "Updated"
	}
	fmt.Fprintf(f.IOStreams.Out, "%s context %q (%s) in %s\n", verb, o.Name, contextview.DescribeStore(f.Environ, ctx), file.Path())
	if ctx.Store.DynamoDB != nil && ctx.Store.DynamoDB.StoreEndpoint() == "" && !ctx.Protected {
		fmt.Fprintf(f.IOStreams.ErrOut, "note: %q points at real AWS and is not protected; consider --protected\n", o.Name)
	}
	return nil
}

// setNotify applies the --notify-* flags: --notify-clear first, then each
// sink given is added unless the context already has it. A webhook URL is
// checked without being quoted: it holds the webhook's token.
func setNotify(ctx *config.Context, o *Options) error {
	ch := o.changed
	if o.NotifyClear {
		ctx.Notify = nil
	}
	if ch("notify-format") && o.NotifyFormat != config.WebhookJSON && o.NotifyFormat != config.WebhookSlack {
		return cmdutil.Usagef("--notify-format %q: use json or slack", o.NotifyFormat)
	}
	add := func(s config.NotifySink) {
		for _, have := range ctx.Notify {
			if reflect.DeepEqual(have.Webhook, s.Webhook) && reflect.DeepEqual(have.SNS, s.SNS) {
				return
			}
		}
		ctx.Notify = append(ctx.Notify, s)
	}
	format := ""
	if o.NotifyFormat == config.WebhookSlack {
		format = config.WebhookSlack
	}
	for i, u := range o.NotifyWebhooks {
		if err := config.ValidateWebhookURL(u); err != nil {
			return cmdutil.Usagef("--notify-webhook #%d %v", i+1, err)
		}
		add(config.NotifySink{Webhook: &config.WebhookSink{URL: u, Format: format}})
	}
	for _, v := range o.NotifyWebhookEnvs {
		add(config.NotifySink{Webhook: &config.WebhookSink{URLEnv: v, Format: format}})
	}
	for _, arn := range o.NotifySNS {
		add(config.NotifySink{SNS: &config.SNSSink{TopicARN: arn}})
	}
	if ch("notify-timeout") {
		if o.NotifyTimeout <= 0 || o.NotifyTimeout > config.MaxNotifyTimeout {
			return cmdutil.Usagef("--notify-timeout %s is out of range: give a duration from 1s to %s", human.Duration(o.NotifyTimeout), human.Duration(config.MaxNotifyTimeout))
		}
		ctx.NotifyTimeout = config.Duration(o.NotifyTimeout)
	}
	if ch("request-timeout") {
		if err := config.CheckRequestTimeout(o.RequestTimeout); err != nil {
			return cmdutil.Usagef("--request-timeout: %v", err)
		}
		ctx.RequestTimeout = config.Duration(o.RequestTimeout)
	}
	set(ch, "allow-no-notify", &ctx.AllowNoNotify, o.AllowNoNotify)
	set(ch, "mcp-read-only", &ctx.MCP.ReadOnly, o.MCPReadOnly)
	if ch("mcp-max-sessions") || ch("mcp-session-idle-timeout") {
		lim := sessions.Limits{Max: ctx.MCP.MaxSessions, Idle: ctx.MCP.SessionIdleTimeout.Std()}
		if ch("mcp-max-sessions") {
			if o.MCPMaxSessions < 1 {
				return cmdutil.Usagef("--mcp-max-sessions %d: give 1 to %d", o.MCPMaxSessions, sessions.MaxMaxSessions)
			}
			lim.Max = o.MCPMaxSessions
		}
		if ch("mcp-session-idle-timeout") {
			lim.Idle = o.MCPSessionIdle
		}
		if err := sessions.Check(lim); err != nil {
			return cmdutil.Usagef("--mcp-max-sessions, --mcp-session-idle-timeout: %v", err)
		}
		ctx.MCP.MaxSessions, ctx.MCP.SessionIdleTimeout = lim.Max, config.Duration(lim.Idle)
	}
	if ch("mcp-proposals-per-hour") {
		if err := approval.CheckProposalsPerHour(o.MCPProposals); err != nil || o.MCPProposals == 0 {
			return cmdutil.Usagef("--mcp-proposals-per-hour %d: give 1 to %d", o.MCPProposals, approval.MaxProposalsPerHour)
		}
		ctx.MCP.ProposalsPerHour = o.MCPProposals
	}
	return nil
}

// setServiceEndpoints applies --service-endpoint SERVICE=URL values; an
// empty URL removes the service's endpoint.
func setServiceEndpoints(d *config.DynamoDBStore, values []string) error {
	for _, v := range values {
		svc, u, ok := strings.Cut(v, "=")
		if !ok || !slices.Contains(config.EndpointServices, svc) {
			return cmdutil.Usagef("--service-endpoint %q: give SERVICE=URL with SERVICE one of %s", v, strings.Join(config.EndpointServices, ", "))
		}
		if u == "" {
			delete(d.Endpoints, svc)
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return cmdutil.Usagef("--service-endpoint %s=%q: the URL needs http:// or https:// and a host, like http://127.0.0.1:4566", svc, u)
		}
		if d.Endpoints == nil {
			d.Endpoints = map[string]string{}
		}
		d.Endpoints[svc] = u
	}
	if len(d.Endpoints) == 0 {
		d.Endpoints = nil
	}
	return nil
}

func set[T any](changed func(string) bool, flag string, dst *T, v T) {
	if changed(flag) {
		*dst = v
	}
}
