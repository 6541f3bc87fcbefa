package config

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lazyre"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// LocalContextName is the built-in context used when no config file exists.
const LocalContextName = "local"

// DefaultTable is the DynamoDB table a context uses unless it names another.
const DefaultTable = "kosha-control"

// DefaultDependencies are the LLD's downstreams, known to every context.
var DefaultDependencies = []string{"core-api", "openai", "postgres", "screening-sim"}

// DefaultMaxOverride caps how long an override may last unless the context
// raises or lowers it.
const DefaultMaxOverride = 24 * time.Hour

// The range of a context's max-override, checked by [CheckMaxOverride]. The
// floor is above the shortest override the fleet can see (the override
// cache period, 5 s: breaker.MinOverride), so every context admits some
// override; the ceiling is 30 days.
const (
	MinMaxOverride = time.Minute
	MaxMaxOverride = 30 * 24 * time.Hour
)

// ErrMaxOverrideRange matches the error of [CheckMaxOverride].
var ErrMaxOverrideRange = errors.New("max-override out of range")

// CheckMaxOverride reports whether d may be a context's max-override: from
// [MinMaxOverride] to [MaxMaxOverride]. A context whose maximum is under
// the shortest override could never force anything open. The error matches
// [ErrMaxOverrideRange].
func CheckMaxOverride(d time.Duration) error {
	if d < MinMaxOverride || d > MaxMaxOverride {
		return maxOverrideError(d)
	}
	return nil
}

type maxOverrideError time.Duration

func (e maxOverrideError) Error() string {
	return fmt.Sprintf("max-override %s is out of range: give a duration between %s and %s",
		time.Duration(e), shortDuration(MinMaxOverride), shortDuration(MaxMaxOverride))
}

func (e maxOverrideError) Is(target error) bool { return target == ErrMaxOverrideRange }

// shortDuration writes 1m0s as 1m and 720h0m0s as 720h.
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// ErrNoContext reports a context name that the config does not define.
var ErrNoContext = exitcode.New(exitcode.NotFound, "no such context")

// ErrInvalid reports a config file or value that cannot be used.
var ErrInvalid = exitcode.New(exitcode.Usage, "invalid configuration")

// ErrChanged reports that the file changed on disk between read and write.
var ErrChanged = exitcode.New(exitcode.Conflict, "config file changed by another process")

// File is the whole configuration.
type File struct {
	CurrentContext string              `yaml:"current-context,omitempty" json:"current-context,omitempty"`
	Contexts       map[string]*Context `yaml:"contexts,omitempty" json:"contexts,omitempty"`

	path   string
	digest [32]byte
	exists bool
	mode   os.FileMode
	// invalid holds the contexts Load found out of range, by name: each is
	// refused when selected or used, and Update carries it unchanged (see
	// [File.Invalid]).
	invalid map[string]invalidContext
}

// invalidContext is a context Load refused: why (with the file's line), and
// the context as it was read, so Update can tell one carried unchanged from
// one a command changed.
type invalidContext struct {
	err  error
	read []byte
}

// Context is one named environment koshactl can act on.
type Context struct {
	Store        StoreConfig     `yaml:"store" json:"store"`
	Dependencies []string        `yaml:"dependencies,omitempty" json:"dependencies,omitempty"`
	Protected    bool            `yaml:"protected,omitempty" json:"protected,omitempty"`
	MaxOverride  Duration        `yaml:"max-override,omitempty" json:"max-override,omitempty"`
	Chaos        ChaosConfig     `yaml:"chaos,omitempty" json:"chaos,omitzero"`
	Metrics      MetricsConfig   `yaml:"metrics,omitempty" json:"metrics,omitzero"`
	RateLimit    RateLimitConfig `yaml:"ratelimit,omitempty" json:"ratelimit,omitzero"`
	// Notify lists where the context's changes are announced (see
	// docs/notifications.md). Empty: nowhere.
	Notify []NotifySink `yaml:"notify,omitempty" json:"notify,omitempty"`
	// NotifyTimeout bounds the delivery of one notification to all sinks;
	// zero means notify's default (5s).
	NotifyTimeout Duration `yaml:"notify-timeout,omitempty" json:"notify-timeout,omitempty"`
	// AllowNoNotify lets a mutating command skip its notification with
	// --no-notify. Off by default: the channel hears of every change.
	AllowNoNotify bool `yaml:"allow-no-notify,omitempty" json:"allow-no-notify,omitempty"`
	// MCP is how `koshactl mcp` serves this context (docs/mcp.md).
	MCP MCPConfig `yaml:"mcp,omitempty" json:"mcp,omitzero"`
	// RequestTimeout bounds one AWS request (each attempt, from the dial to
	// the answer's last byte) of this context's clients: DynamoDB, STS,
	// Secrets Manager, CloudWatch, SNS. Zero means the default (10s); the
	// global --request-timeout wins over it. [CheckRequestTimeout] is its
	// range.
	RequestTimeout Duration `yaml:"request-timeout,omitempty" json:"request-timeout,omitempty"`
}

// The range of a request timeout ([Context.RequestTimeout], the global
// --request-timeout).
const (
	MinRequestTimeout = time.Second
	MaxRequestTimeout = time.Hour
)

// CheckRequestTimeout refuses a request timeout outside
// [MinRequestTimeout, MaxRequestTimeout]: a shorter one fails every
// request, a longer one leaves a hung endpoint unnoticed.
func CheckRequestTimeout(d time.Duration) error {
	if d < MinRequestTimeout || d > MaxRequestTimeout {
		return fmt.Errorf("request timeout %s is out of range: give a duration from %s to %s, like 30s or 2m",
			human.Duration(d), human.Duration(MinRequestTimeout), human.Duration(MaxRequestTimeout))
	}
	return nil
}

// MCPConfig is how `koshactl mcp` serves a context to agents.
type MCPConfig struct {
	// ReadOnly offers agents the read tools only: no tool proposes a
	// change. Off by default: the proposal tools make change requests
	// that a person approves, never a change.
	ReadOnly bool `yaml:"read-only,omitempty" json:"read-only,omitempty"`
	// MaxSessions caps the HTTP transport's open sessions (zero: the
	// default, 32); --max-sessions wins over it.
	MaxSessions int `yaml:"max-sessions,omitempty" json:"max-sessions,omitempty"`
	// SessionIdleTimeout closes an HTTP session idle this long (zero: the
	// default, 30m); --session-idle-timeout wins over it.
	SessionIdleTimeout Duration `yaml:"session-idle-timeout,omitempty" json:"session-idle-timeout,omitempty"`
	// ProposalsPerHour is the budget of one identity's proposals: how
	// many change requests they may make in any hour (zero: the default,
	// 100; counted in the table, across servers and restarts).
	ProposalsPerHour int `yaml:"proposals-per-hour,omitempty" json:"proposals-per-hour,omitempty"`
}

// MaxNotifyTimeout is the longest notify-timeout a context may set: a
// change must never wait long on its announcement.
const MaxNotifyTimeout = 30 * time.Second

// MaxNotifySinks bounds a context's sinks.
const MaxNotifySinks = 10

// NotifySink is one place a context's changes are announced: exactly one of
// Webhook or SNS.
type NotifySink struct {
	// Name identifies the sink in warnings and audit records; default
	// "webhook-N" or "sns-N" (N its 1-based position).
	Name    string       `yaml:"name,omitempty" json:"name,omitempty"`
	Webhook *WebhookSink `yaml:"webhook,omitempty" json:"webhook,omitempty"`
	SNS     *SNSSink     `yaml:"sns,omitempty" json:"sns,omitempty"`
}

// Webhook formats.
const (
	WebhookJSON  = "json"
	WebhookSlack = "slack"
)

// WebhookSink posts each notification to a URL. The URL is a secret (a
// Slack incoming webhook's path is its token): keep it in the environment
// with URLEnv, or in this file (mode 0600); koshactl never prints it.
type WebhookSink struct {
	// URL is the https:// endpoint (http:// only to a loopback address).
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// URLEnv names an environment variable holding the URL instead.
	URLEnv string `yaml:"url-env,omitempty" json:"url-env,omitempty"`
	// Format is json (default: docs/contracts/notification.md) or slack (an
	// incoming-webhook message).
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
}

// SNSSink publishes each notification to an SNS topic (AWS Chatbot, email,
// PagerDuty and Opsgenie subscriptions read it). The client is built from
// the context's AWS settings (profile, endpoints) in the topic's region.
type SNSSink struct {
	TopicARN string `yaml:"topic-arn" json:"topic-arn"`
}

// SinkName returns the sink's name: its own, else kind-N.
func (s NotifySink) SinkName(i int) string {
	if s.Name != "" {
		return s.Name
	}
	if s.SNS != nil {
		return fmt.Sprintf("sns-%d", i+1)
	}
	return fmt.Sprintf("webhook-%d", i+1)
}

var (
	snsTopicARN = lazyre.New(`^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`)
	envNameRE   = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ValidateWebhookURL checks a webhook URL without ever quoting it (it holds
// a token): https with a host, or http to a loopback address.
func ValidateWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return errors.New("is not an absolute http(s) URL with a host (and no user:password)")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
		return errors.New("uses http:// to a host that is not loopback: use https:// (the URL carries its token in clear)")
	}
	return errors.New("is not an http(s) URL")
}

// validateNotify checks the context's notification settings.
func (c *Context) validateNotify(name string) error {
	if len(c.Notify) > MaxNotifySinks {
		return fmt.Errorf("%w: context %q: %d notify sinks, at most %d", ErrInvalid, name, len(c.Notify), MaxNotifySinks)
	}
	if c.NotifyTimeout < 0 || time.Duration(c.NotifyTimeout) > MaxNotifyTimeout {
		return fmt.Errorf("%w: context %q: notify-timeout %s is out of range: give up to %s", ErrInvalid, name, human.Duration(time.Duration(c.NotifyTimeout)), human.Duration(MaxNotifyTimeout))
	}
	seen := map[string]bool{}
	for i, s := range c.Notify {
		where := fmt.Sprintf("context %q: notify[%d]", name, i)
		if s.Name != "" && !validName(s.Name) {
			return fmt.Errorf("%w: %s: name %q: use 1-63 letters, digits, '.', '_' or '-'", ErrInvalid, where, s.Name)
		}
		n := s.SinkName(i)
		if seen[n] {
			return fmt.Errorf("%w: %s: sink name %q is used twice", ErrInvalid, where, n)
		}
		seen[n] = true
		switch {
		case (s.Webhook == nil) == (s.SNS == nil):
			return fmt.Errorf("%w: %s: give exactly one of webhook or sns", ErrInvalid, where)
		case s.Webhook != nil:
			w := s.Webhook
			if (w.URL == "") == (w.URLEnv == "") {
				return fmt.Errorf("%w: %s: webhook needs exactly one of url or url-env", ErrInvalid, where)
			}
			if w.URL != "" {
				if err := ValidateWebhookURL(w.URL); err != nil {
					return fmt.Errorf("%w: %s: webhook url %v", ErrInvalid, where, err)
				}
			}
			if w.URLEnv != "" && !envNameRE.MatchString(w.URLEnv) {
				return fmt.Errorf("%w: %s: url-env %q is not an environment variable name", ErrInvalid, where, w.URLEnv)
			}
			if w.Format != "" && w.Format != WebhookJSON && w.Format != WebhookSlack {
				return fmt.Errorf("%w: %s: webhook format %q: use json or slack", ErrInvalid, where, w.Format)
			}
		default:
			if !snsTopicARN.MatchString(s.SNS.TopicARN) {
				return fmt.Errorf("%w: %s: sns topic-arn %q is not an SNS topic ARN like arn:aws:sns:us-east-1:123456789012:incidents", ErrInvalid, where, s.SNS.TopicARN)
			}
		}
	}
	return nil
}

// StoreConfig selects the context's store: exactly one of Local or DynamoDB.
type StoreConfig struct {
	Local    *LocalStore    `yaml:"local,omitempty" json:"local,omitempty"`
	DynamoDB *DynamoDBStore `yaml:"dynamodb,omitempty" json:"dynamodb,omitempty"`
}

// LocalStore is the embedded store.
type LocalStore struct {
	// Path of the database file; empty means the default under the state dir.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
}

// DynamoDBStore is a DynamoDB table, or a DynamoDB-compatible endpoint.
type DynamoDBStore struct {
	Table   string `yaml:"table" json:"table"`
	Region  string `yaml:"region,omitempty" json:"region,omitempty"`
	Profile string `yaml:"profile,omitempty" json:"profile,omitempty"`
	// EndpointURL is one endpoint for every AWS service koshactl calls
	// (DynamoDB, STS, Secrets Manager, CloudWatch, SNS): a DynamoDB-compatible or
	// LocalStack-style server. Empty: the SDK's standard endpoint
	// configuration (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>, the shared
	// config's services sections), else AWS.
	EndpointURL string `yaml:"endpoint-url,omitempty" json:"endpoint-url,omitempty"`
	// Endpoints names an endpoint per service (keys in [EndpointServices]);
	// each wins over EndpointURL for its service.
	Endpoints map[string]string `yaml:"endpoints,omitempty" json:"endpoints,omitempty"`
	// IMDS allows the credential chain to probe EC2 instance metadata. Off by
	// default: on a laptop that probe hangs for seconds before failing.
	IMDS bool `yaml:"imds,omitempty" json:"imds,omitempty"`
	// StaticCredentials uses fixed dummy credentials, for local
	// DynamoDB-compatible endpoints (DynamoDB Local, LocalStack, moto) only.
	StaticCredentials bool `yaml:"static-credentials,omitempty" json:"static-credentials,omitempty"`
}

// EndpointServices are the services a context can name an endpoint for.
var EndpointServices = []string{"cloudwatch", "dynamodb", "secretsmanager", "sns", "sts"}

// StoreEndpoint returns the endpoint the context names for its DynamoDB
// table: endpoints.dynamodb, else endpoint-url; empty when it names none.
func (d *DynamoDBStore) StoreEndpoint() string {
	if ep := d.Endpoints["dynamodb"]; ep != "" {
		return ep
	}
	return d.EndpointURL
}

// ChaosConfig says where the chaos signing key comes from and what it may target.
type ChaosConfig struct {
	SecretID string   `yaml:"secret-id,omitempty" json:"secret-id,omitempty"`
	KeyFile  string   `yaml:"key-file,omitempty" json:"key-file,omitempty"`
	KeyEnv   string   `yaml:"key-env,omitempty" json:"key-env,omitempty"`
	Targets  []string `yaml:"targets,omitempty" json:"targets,omitempty"`
	// PropagationDelay is how long after a Secrets Manager rotation koshactl
	// keeps signing with the previous key, so data planes that cache the
	// secret learn the new one first. Nil means the default (5m, the Lambda
	// extension's cache TTL); 0s signs with the new key at once.
	PropagationDelay *Duration `yaml:"propagation-delay,omitempty" json:"propagation-delay,omitempty"`
}

// MetricsConfig says where breaker_state gauges are read from.
type MetricsConfig struct {
	CloudWatch *CloudWatchMetrics `yaml:"cloudwatch,omitempty" json:"cloudwatch,omitempty"`
	Prometheus *PrometheusMetrics `yaml:"prometheus,omitempty" json:"prometheus,omitempty"`
}

// CloudWatchMetrics reads the breaker_state metric from CloudWatch.
type CloudWatchMetrics struct {
	Namespace   string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Service     string `yaml:"service,omitempty" json:"service,omitempty"`
	Region      string `yaml:"region,omitempty" json:"region,omitempty"`
	EndpointURL string `yaml:"endpoint-url,omitempty" json:"endpoint-url,omitempty"`
}

// PrometheusMetrics scrapes a Prometheus text endpoint (the sandbox's /metrics).
type PrometheusMetrics struct {
	URL string `yaml:"url" json:"url"`
}

// RateLimitConfig overrides the LLD's bucket defaults (capacity 20, 1 token/s).
type RateLimitConfig struct {
	Capacity        float64 `yaml:"capacity,omitempty" json:"capacity,omitempty"`
	RefillPerSecond float64 `yaml:"refill-per-second,omitempty" json:"refill-per-second,omitempty"`
}

// Duration is a time.Duration written as "30m" in YAML and JSON.
type Duration time.Duration

// MarshalYAML writes the duration as text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads "90m", "4h" and the like (see [ParseDuration]).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration reads a duration of a file, like 30m or 4h; a negative one
// is refused.
func ParseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a duration like 30m or 4h", s)
	}
	return v, nil
}

// Std returns the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// MarshalText writes the duration as text (for JSON).
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// IsLocal reports whether the context uses the embedded store.
func (c *Context) IsLocal() bool { return c.Store.DynamoDB == nil }

// KnownDependencies returns the context's dependencies, or the defaults.
func (c *Context) KnownDependencies() []string {
	if len(c.Dependencies) == 0 {
		return slices.Clone(DefaultDependencies)
	}
	return slices.Sorted(slices.Values(c.Dependencies))
}

// MaxOverrideDuration returns the longest override the context allows
// (its max-override, else [DefaultMaxOverride]).
func (c *Context) MaxOverrideDuration() time.Duration {
	if c.MaxOverride <= 0 {
		return DefaultMaxOverride
	}
	return time.Duration(c.MaxOverride)
}

// validName is the rule of ValidateName, written out rather than as
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$, whose 62 counted repetitions every
// command paid to compile (TestNameRuleIsTheExpression checks that the two
// agree).
func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// ValidateName checks a context name.
func ValidateName(name string) error {
	if !validName(name) {
		return fmt.Errorf("%w: context name %q: use 1-63 letters, digits, '.', '_' or '-'", ErrInvalid, name)
	}
	return nil
}

// Validate checks one context for contradictions and values out of range
// (a max-override outside [CheckMaxOverride]'s range). Load calls
// it for every context and refuses the one it fails for where it is used
// ([File.Context]), not the whole file; Update calls it for every context and
// writes no new or changed one that fails it.
func (c *Context) Validate(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if c.MaxOverride != 0 {
		if err := CheckMaxOverride(time.Duration(c.MaxOverride)); err != nil {
			return &keyError{key: "max-override", err: fmt.Errorf("%w: context %q: %w", ErrInvalid, name, err),
				fix: fmt.Sprintf("koshactl config set-context %s --max-override %s", name, shortDuration(DefaultMaxOverride))}
		}
	}
	if c.RequestTimeout != 0 {
		if err := CheckRequestTimeout(time.Duration(c.RequestTimeout)); err != nil {
			return &keyError{key: "request-timeout", err: fmt.Errorf("%w: context %q: %w", ErrInvalid, name, err),
				fix: fmt.Sprintf("koshactl config set-context %s --request-timeout 30s", name)}
		}
	}
	if c.Store.Local != nil && c.Store.DynamoDB != nil {
		return fmt.Errorf("%w: context %q names both a local and a dynamodb store; keep one", ErrInvalid, name)
	}
	if d := c.Store.DynamoDB; d != nil {
		if d.Table == "" {
			return fmt.Errorf("%w: context %q: dynamodb store needs a table", ErrInvalid, name)
		}
		if d.Region == "" {
			return fmt.Errorf("%w: context %q: dynamodb store needs a region (set it with koshactl config set-context %s --region R)", ErrInvalid, name, name)
		}
		for svc := range d.Endpoints {
			if !slices.Contains(EndpointServices, svc) {
				return fmt.Errorf("%w: context %q: endpoints names unknown service %q: use one of %s", ErrInvalid, name, svc, strings.Join(EndpointServices, ", "))
			}
		}
	}
	return c.validateNotify(name)
}

// DefaultPathFrom returns where the config file is read from: $KOSHACTL_CONFIG
// as getenv reads it, else koshactl/config.yaml in the user's config directory
// (os.UserConfigDir).
func DefaultPathFrom(getenv func(string) string) (string, error) {
	if p := getenv("KOSHACTL_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find config dir: %w (set KOSHACTL_CONFIG)", err)
	}
	return filepath.Join(dir, "koshactl", "config.yaml"), nil
}

// StateDirFrom returns where the local context keeps its embedded store and
// keys: $KOSHACTL_STATE_DIR, else $XDG_STATE_HOME/koshactl, else
// ~/.local/state/koshactl (os.UserHomeDir), the variables as getenv reads them.
func StateDirFrom(getenv func(string) string) (string, error) {
	if p := getenv("KOSHACTL_STATE_DIR"); p != "" {
		return p, nil
	}
	if p := getenv("XDG_STATE_HOME"); p != "" && filepath.IsAbs(p) {
		return filepath.Join(p, "koshactl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find state dir: %w (set KOSHACTL_STATE_DIR)", err)
	}
	return filepath.Join(home, ".local", "state", "koshactl"), nil
}

// LocalStorePathFrom returns the database file of a local context: the
// context's own path if it names one, else local.db in the state directory
// ([StateDirFrom] with getenv).
func (c *Context) LocalStorePathFrom(getenv func(string) string) (string, error) {
	if c.Store.Local != nil && c.Store.Local.Path != "" {
		return c.Store.Local.Path, nil
	}
	dir, err := StateDirFrom(getenv)
	if err != nil {
		return "", err
	}
	return c.LocalStorePathIn(dir), nil
}

// LocalStorePathIn returns the database file of a local context whose state
// directory is stateDir: the context's own path if it names one, else
// local.db in stateDir.
func (c *Context) LocalStorePathIn(stateDir string) string {
	if c.Store.Local != nil && c.Store.Local.Path != "" {
		return c.Store.Local.Path
	}
	return filepath.Join(stateDir, "local.db")
}

// BuiltinLocal returns the built-in local context.
func BuiltinLocal() *Context { return &Context{Store: StoreConfig{Local: &LocalStore{}}} }

// MaxFileSize bounds the config file; a config with hundreds of contexts
// is a few hundred KiB.
const MaxFileSize = 4 << 20

// Load reads the file at path. A missing file yields an empty File that still
// resolves the built-in local context. The file is decoded by yaml.v3 with
// KnownFields (an unknown key is an error; aliases and merge keys read as
// yaml.v3 reads them): koshactl writes this file itself (set-context), a
// whole value replaces the default, and no key needs a position beyond
// yaml.v3's own line (see docs/project-layout.md, "Reading YAML"). The path must be a regular file (a
// symbolic link to one is followed): a named pipe or device is refused
// before it is read, since reading it could block forever.
//
// A file that does not decode (a syntax error, an unknown key, a value of
// the wrong type) is refused whole. A context that decodes but fails
// [Context.Validate] is kept, and refused only when used ([File.Invalid]).
func Load(path string) (*File, error) {
	f := &File{path: path}
	data, st, err := fsutil.ReadRegular(path, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	f.exists = true
	f.mode = st.Mode()
	f.digest = sha256.Sum256(data)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, path, textsafe.OneLine(strings.ReplaceAll(err.Error(), "\n", "; ")))
	}
	for name, c := range f.Contexts {
		if c == nil {
			return nil, fmt.Errorf("%w: %s: context %q is empty", ErrInvalid, path, name)
		}
		if err := c.Validate(name); err != nil {
			// One context out of range is refused where it is used, not the
			// whole file: the operator keeps the other contexts (prod in an
			// incident) and the commands that repair this one.
			if f.invalid == nil {
				f.invalid = map[string]invalidContext{}
			}
			f.invalid[name] = invalidContext{err: locate(path, data, name, err), read: encodeContext(c)}
		}
	}
	return f, nil
}

// locate returns err, a problem of context name, prefixed with the file
// and, for a key error, the key's line, and followed by the repair.
func locate(path string, data []byte, name string, err error) error {
	fix := fmt.Sprintf("koshactl config delete-context %s", name)
	var ke *keyError
	if errors.As(err, &ke) {
		if ke.fix != "" {
			fix = ke.fix
		}
		if line := keyLine(data, name, ke.key); line > 0 {
			return fmt.Errorf("%s: line %d: %w (fix it with %s, or edit the file)", path, line, err, fix)
		}
	}
	if strings.Contains(err.Error(), "koshactl config") {
		// The message names its own repair already.
		return fmt.Errorf("%s: %w", path, err)
	}
	return fmt.Errorf("%s: %w (fix it in the file, or remove the context with %s)", path, err, fix)
}

// encodeContext is the context as Update would write it, to compare two.
func encodeContext(c *Context) []byte {
	b, _ := yaml.Marshal(c) // nil when it cannot be encoded
	return b
}

// Invalid returns why the named context was refused when the file was
// loaded (a value out of range, with the file's line and the fix), or nil.
// [File.Context] returns the same error for it; the config commands that
// show and repair contexts read it through [File.Lookup].
func (f *File) Invalid(name string) error {
	if bad, ok := f.invalid[name]; ok {
		return bad.err
	}
	return nil
}

// Lookup returns the named context as the file holds it, valid or not
// (the built-in local one when the file does not define local), and
// whether it exists. It is for showing and repairing a context; a command
// that acts on one uses [File.Context], which refuses an invalid one.
func (f *File) Lookup(name string) (*Context, bool) {
	if c, ok := f.Contexts[name]; ok {
		return c, true
	}
	if name == LocalContextName {
		return BuiltinLocal(), true
	}
	return nil, false
}

// keyError is a problem with one key of a context, so Load can say on
// which line of the file it is.
type keyError struct {
	key string
	// fix is the command that repairs the key, if one does.
	fix string
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// keyLine returns the line of contexts.<name>.<key> in data, or 0 when it
// cannot be found (written through an alias, say).
func keyLine(data []byte, name, key string) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n := doc.Content[0]
	for _, k := range []string{"contexts", name, key} {
		if n.Kind != yaml.MappingNode {
			return 0
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				if k == key {
					return n.Content[i].Line
				}
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return 0
}

// PermissionWarning returns a one-line warning when the file that was
// loaded is writable by its group or by others, and "" otherwise. Whoever
// can write the file chooses which table (and which AWS account) production
// writes go to, so koshactl says so, with the fix; it does not refuse,
// because the file holds no secret and a refusal would lock an operator
// out in the middle of an incident on a shared host. The bits are those of
// the file read (after symbolic links). Windows reports no meaningful
// permission bits, so it never warns there.
func (f *File) PermissionWarning() string {
	if !f.exists || runtime.GOOS == "windows" || f.mode.Perm()&0o022 == 0 {
		return ""
	}
	return fmt.Sprintf("config file %s has mode %04o: anyone in its group or on this machine who can write it chooses the table koshactl writes to; chmod 600 %s",
		f.path, f.mode.Perm(), f.path)
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Exists reports whether the file was on disk when loaded.
func (f *File) Exists() bool { return f.exists }

// Names returns the context names, the built-in local one included when it
// is not shadowed, sorted.
func (f *File) Names() []string {
	names := slices.Collect(maps.Keys(f.Contexts))
	if _, ok := f.Contexts[LocalContextName]; !ok {
		names = append(names, LocalContextName)
	}
	slices.Sort(names)
	return names
}

// Current returns the name of the current context: the file's choice, else local.
func (f *File) Current() string {
	return cmp.Or(f.CurrentContext, LocalContextName)
}

// Context returns the named context. "local" resolves to the built-in one
// unless the file defines its own. A context Load found invalid is refused
// with [File.Invalid]'s error (matching ErrInvalid): safety fails closed
// for that context, and only for it.
func (f *File) Context(name string) (*Context, error) {
	if c, ok := f.Contexts[name]; ok {
		if err := f.Invalid(name); err != nil {
			return nil, err
		}
		return c, nil
	}
	if name == LocalContextName {
		return BuiltinLocal(), nil
	}
	return nil, fmt.Errorf("%w %q: known contexts are %s (create it with koshactl config set-context %s ...)",
		ErrNoContext, name, strings.Join(f.Names(), ", "), name)
}

// LockSuffix names the lock file beside the config file (its final target,
// links resolved): koshactl creates it and takes an flock on it while it
// reads and writes the config, so concurrent commands take turns. The
// config file itself is never locked (it may be a link to a file koshactl
// did not create).
const LockSuffix = ".lock"

// lockWait bounds how long a write waits for another koshactl's.
const lockWait = 10 * time.Second

// lockPath takes the config's lock at path ([fsutil.Lock]); held past
// lockWait, the error matches ErrChanged and says to re-run.
func lockPath(path string) (release func(), err error) {
	release, err = fsutil.Lock(path, lockWait)
	if errors.Is(err, fsutil.ErrLocked) {
		return nil, fmt.Errorf("%w: %w; re-run the command once the other koshactl is done", ErrChanged, err)
	}
	if err != nil {
		return nil, fmt.Errorf("lock config: %w", err)
	}
	return release, nil
}

// Update changes the config file at path as one step among concurrent
// koshactl commands: under the lock beside it ([LockSuffix]) it loads the
// file afresh, applies change, and saves it (atomically, by rename, with
// mode 0600), so two commands changing different contexts at once both
// land. change's error aborts, nothing written. It returns the file as
// saved. It refuses with ErrChanged when the file on disk is no longer the
// one it loaded (a writer that does not take the lock, an editor), so no
// change is silently dropped.
//
// When the path is a symbolic link (a config kept in a dotfiles checkout),
// Update writes through it: the new content goes to a temporary file in the
// directory of the link's final target and is renamed over the target, so
// the link stays a link and a reader sees the old file or the new one,
// never half of one. A dangling link's target is created.
//
// Every context must pass [Context.Validate], except one that Load found
// invalid and that is written back unchanged: a command on another context
// (use-context, set-context) must not be refused for it, nor drop it.
func Update(path string, change func(*File) error) (*File, error) {
	target, err := targetOf(path)
	if err != nil {
		return nil, err
	}
	release, err := lockPath(target + LockSuffix)
	if err != nil {
		return nil, err
	}
	defer release()
	f, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := change(f); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, f.save(target)
}

// check validates every context before a save (see [Update]).
func (f *File) check() error {
	for name, c := range f.Contexts {
		if c == nil {
			return fmt.Errorf("%w: context %q is empty", ErrInvalid, name)
		}
		if err := c.Validate(name); err != nil {
			if bad, ok := f.invalid[name]; ok && bytes.Equal(encodeContext(c), bad.read) {
				continue
			}
			return err
		}
	}
	return nil
}

// targetOf creates the config's directory and returns the file path ends
// at, links resolved.
func targetOf(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create config dir: %w", err)
	}
	target, err := resolveLinks(path)
	if err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	return target, nil
}

// save writes f to target (the lock held) if the file there is still the
// one loaded.
func (f *File) save(target string) error {
	cur, _, err := fsutil.ReadRegular(target, MaxFileSize)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if f.exists {
			return fmt.Errorf("%w: %s was removed since koshactl read it; re-run the command", ErrChanged, f.path)
		}
	case err != nil:
		return fmt.Errorf("read config: %w", err)
	default:
		if !f.exists || sha256.Sum256(cur) != f.digest {
			return fmt.Errorf("%w: %s changed since koshactl read it; re-run the command", ErrChanged, f.path)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	// The final target (links resolved above, by the documented rule) is
	// replaced only if it is a regular file or absent, through a temporary
	// file created exclusively beside it. Nothing here can block (a pipe
	// is refused, not written), so no command context is needed.
	if err := fsutil.ReplaceFile(context.Background(), target, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	f.exists = true
	f.mode = 0o600
	f.digest = sha256.Sum256(buf.Bytes())
	for name := range f.invalid {
		if c, ok := f.Contexts[name]; !ok || c.Validate(name) == nil {
			delete(f.invalid, name)
		}
	}
	return nil
}

// maxLinks bounds a chain of symbolic links, as the kernel does (40 on
// Linux), so a loop is an error instead of a hang.
const maxLinks = 40

// resolveLinks follows path through symbolic links to the file they end
// at, which need not exist yet (a dangling link's target). Relative link
// targets are taken from the link's own directory.
func resolveLinks(path string) (string, error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return p, nil
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	return "", fmt.Errorf("%s: more than %d symbolic links in a row (a loop?); point it at the config file directly", path, maxLinks)
}
