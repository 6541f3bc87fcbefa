package awsconf

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Defaults applied by [Load] for zero-valued [Options] fields.
const (
	// DefaultHTTPTimeout bounds one HTTP request, from dial to the last byte
	// of the response.
	DefaultHTTPTimeout = 10 * time.Second
	// DefaultMaxAttempts is how many times a request is tried in all
	// (the first attempt included) before its error is returned.
	DefaultMaxAttempts = 3
	// MaxBackoff caps the wait between two attempts.
	MaxBackoff = 5 * time.Second
	// dialTimeout bounds the TCP connect within a request.
	dialTimeout = 3 * time.Second
)

// StaticAccessKeyID is the access key id of the dummy credentials
// Options.StaticCredentials selects. It is not a secret: DynamoDB-compatible
// local servers accept any credentials.
const StaticAccessKeyID = "koshactl-local"

// Options are a context's AWS settings. The zero value resolves everything
// the SDK's usual way (AWS_REGION, AWS_PROFILE, the shared config files)
// except that IMDS is off.
type Options struct {
	// Region is the AWS region. Empty uses AWS_REGION or the profile's region;
	// Load fails when none is set.
	Region string
	// Profile names a shared-config profile. Empty uses AWS_PROFILE, else
	// "default".
	Profile string
	// EndpointURL points every client (DynamoDB, STS, Secrets Manager,
	// CloudWatch, SNS) at one server instead of AWS: a DynamoDB-compatible or
	// LocalStack-style endpoint (http://127.0.0.1:8000 for DynamoDB Local, for
	// example). Empty leaves it to the SDK's standard endpoint configuration
	// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>, the shared config's
	// services sections), else AWS.
	EndpointURL string
	// Endpoints names an endpoint per service, keyed by the names in
	// [Services] ("dynamodb", "sts", "secretsmanager", "cloudwatch", "sns"); each
	// wins over EndpointURL and over the SDK's standard configuration for
	// its service. Empty values are ignored.
	Endpoints map[string]string
	// IMDS lets the credential chain ask the EC2 instance metadata service.
	// Set it only where koshactl runs on EC2 with an instance role; elsewhere
	// the probe only delays failure. Default false.
	IMDS bool
	// StaticCredentials signs requests with fixed dummy credentials instead of
	// resolving real ones. It requires EndpointURL and is refused for
	// amazonaws.com endpoints. Meant for tests and local development against
	// DynamoDB Local, LocalStack or moto. Default false.
	StaticCredentials bool
	// HTTPTimeout bounds one HTTP request. Zero means [DefaultHTTPTimeout].
	HTTPTimeout time.Duration
	// MaxAttempts is the number of attempts per request, retries included.
	// Zero means [DefaultMaxAttempts]; 1 disables retries.
	MaxAttempts int
	// Debug, when set, receives one line per AWS operation of every client
	// built from the config (--debug): service, operation, HTTP status or
	// error code, latency, attempts and request id; never headers, bodies or
	// parameters. Nil logs nothing.
	Debug io.Writer
	// Clock times operations for Debug. Nil means the real clock.
	Clock clock.Clock
}

// Load builds an aws.Config from opts and resolves its credentials. Errors
// about credentials match store.ErrCredentials and are a [*CredentialsError].
func Load(ctx context.Context, opts Options) (aws.Config, error) {
	if err := opts.validate(); err != nil {
		return aws.Config{}, err
	}
	timeout := cmp.Or(opts.HTTPTimeout, DefaultHTTPTimeout)
	attempts := cmp.Or(opts.MaxAttempts, DefaultMaxAttempts)
	httpClient := awshttp.NewBuildableClient().
		WithTimeout(timeout).
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = min(dialTimeout, timeout) })

	imdsState := imds.ClientDisabled
	if opts.IMDS {
		imdsState = imds.ClientEnabled
	}
	loadOpts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithEC2IMDSClientEnableState(imdsState),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.MaxBackoff = MaxBackoff
			})
		}),
	}
	if opts.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(opts.Profile))
	}
	if opts.EndpointURL != "" {
		loadOpts = append(loadOpts, config.WithBaseEndpoint(opts.EndpointURL))
	}
	if opts.StaticCredentials {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(StaticAccessKeyID, "koshactl-local-secret", "")))
	}

	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		var notExist config.SharedConfigProfileNotExistError
		if errors.As(err, &notExist) {
			return aws.Config{}, &CredentialsError{Profile: notExist.Profile, IMDS: opts.IMDS, ProfileMissing: true, Err: err}
		}
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	if se := newServiceEndpoints(opts.Endpoints); len(se) > 0 {
		cfg.ConfigSources = append([]any{se}, cfg.ConfigSources...)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("load aws config: no region: set region in the context, or AWS_REGION")
	}
	if opts.Debug != nil {
		d := &debugLogger{w: opts.Debug, clock: opts.Clock}
		if d.clock == nil {
			d.clock = clock.Real{}
		}
		cfg.APIOptions = append(cfg.APIOptions, d.addDebugMiddleware)
	}
	if opts.StaticCredentials {
		return cfg, nil
	}
	if cfg.Credentials == nil {
		return aws.Config{}, &CredentialsError{Profile: profileName(opts), IMDS: opts.IMDS, Err: errors.New("no credential provider configured")}
	}
	cfg.Credentials = &hintingProvider{inner: cfg.Credentials, profile: profileName(opts), imds: opts.IMDS}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return aws.Config{}, fmt.Errorf("load aws credentials: %w", ctxErr)
		}
		return aws.Config{}, err
	}
	return cfg, nil
}

func (o Options) validate() error {
	if o.HTTPTimeout < 0 {
		return fmt.Errorf("load aws config: negative HTTP timeout %v", o.HTTPTimeout)
	}
	if o.MaxAttempts < 0 {
		return fmt.Errorf("load aws config: negative max attempts %d", o.MaxAttempts)
	}
	if o.EndpointURL != "" {
		if err := validateEndpoint("endpoint URL", o.EndpointURL); err != nil {
			return err
		}
	}
	if err := validateEndpoints(o.Endpoints); err != nil {
		return err
	}
	if o.StaticCredentials {
		if o.EndpointURL == "" && o.Endpoints["dynamodb"] == "" {
			return errors.New("load aws config: static credentials need an endpoint URL: " +
				"they are for DynamoDB-compatible local servers, never for AWS itself")
		}
		for _, ep := range append([]string{o.EndpointURL}, o.Endpoints["dynamodb"], o.Endpoints["sts"],
			o.Endpoints["secretsmanager"], o.Endpoints["cloudwatch"], o.Endpoints["sns"]) {
			if ep != "" && IsAWSEndpoint(ep) {
				return fmt.Errorf("load aws config: static credentials refused for %s: it is an AWS endpoint", ep)
			}
		}
	}
	return nil
}

// IsAWSEndpoint reports whether endpoint is served by AWS itself (a host
// under amazonaws.com or amazonaws.com.cn).
func IsAWSEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, suffix := range []string{"amazonaws.com", "amazonaws.com.cn", "api.aws"} {
		if host == suffix || strings.HasSuffix(host, "."+suffix) {
			return true
		}
	}
	return false
}

// profileName is the profile the SDK resolves: the context's, else
// AWS_PROFILE, else "" (the default profile).
func profileName(o Options) string {
	return cmp.Or(o.Profile, os.Getenv("AWS_PROFILE"))
}

// hintingProvider wraps the credential chain so a retrieval failure, at Load
// or at any later request, is a *CredentialsError.
type hintingProvider struct {
	inner   aws.CredentialsProvider
	profile string
	imds    bool
}

// Retrieve implements aws.CredentialsProvider.
func (p *hintingProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := p.inner.Retrieve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return creds, err
		}
		if isNetworkError(err) {
			return creds, fmt.Errorf("retrieve aws credentials: credential source unreachable: %w: %w", store.ErrUnavailable, err)
		}
		var ssoErr *ssocreds.InvalidTokenError
		return creds, &CredentialsError{
			Profile:    p.profile,
			IMDS:       p.imds,
			SSOExpired: errors.As(err, &ssoErr) || strings.Contains(err.Error(), "SSO token"),
			Err:        err,
		}
	}
	return creds, nil
}

// IsCredentialsProvider lets the SDK see through the wrapper (for example to
// recognize the credentials cache it wraps).
func (p *hintingProvider) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(p.inner, target)
}

// isNetworkError reports whether err is a failure to reach a credential
// source (STS, SSO, a container endpoint) rather than a missing credential.
func isNetworkError(err error) bool {
	if strings.Contains(err.Error(), "ec2imds") {
		// The chain's last resort: an unreachable instance metadata
		// service means "not on EC2", so no credentials.
		return false
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		return true
	}
	var netErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &netErr) || errors.As(err, &dnsErr)
}

// CredentialsError says that no usable credentials were found, which sources
// were tried and how to fix it. It matches store.ErrCredentials.
type CredentialsError struct {
	// Profile is the profile asked for ("" when none was named).
	Profile string
	// IMDS reports whether the instance metadata service was among the
	// sources.
	IMDS bool
	// ProfileMissing reports that Profile is in neither shared file.
	ProfileMissing bool
	// SSOExpired reports that the profile uses SSO and its session expired.
	SSOExpired bool
	// Err is the SDK's error.
	Err error
}

// Error says what was tried and how to fix it, then the SDK's error.
func (e *CredentialsError) Error() string {
	profile := "the default profile"
	if e.Profile != "" {
		profile = fmt.Sprintf("profile %q", e.Profile)
	}
	var b strings.Builder
	switch {
	case e.ProfileMissing:
		fmt.Fprintf(&b, "load aws credentials: profile %q is not in the shared config or credentials file (~/.aws/config, ~/.aws/credentials)", e.Profile)
		b.WriteString("; fix the profile name in the context or AWS_PROFILE, or create it with `aws configure sso` / `aws configure`")
	case e.SSOExpired:
		fmt.Fprintf(&b, "load aws credentials: the SSO session of %s has expired or was never started", profile)
		fmt.Fprintf(&b, "; run `aws sso login%s`", profileFlag(e.Profile))
	default:
		fmt.Fprintf(&b, "load aws credentials: none found for %s; tried environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), "+
			"the shared config and credentials files (SSO, assume-role, credential_process), web identity (AWS_WEB_IDENTITY_TOKEN_FILE), "+
			"the container credentials endpoint", profile)
		if e.IMDS {
			b.WriteString(" and the EC2 instance metadata service")
		} else {
			b.WriteString(" (the EC2 instance metadata service was not asked: set imds: true in the context when running on EC2)")
		}
		fmt.Fprintf(&b, "; set AWS_PROFILE or the context's profile to a configured profile, or run `aws sso login%s` if it uses SSO", profileFlag(e.Profile))
	}
	fmt.Fprintf(&b, ": %v: %v", store.ErrCredentials, e.Err)
	return b.String()
}

func profileFlag(p string) string {
	if p == "" {
		return ""
	}
	return " --profile " + p
}

// Unwrap returns store.ErrCredentials and the SDK's error.
func (e *CredentialsError) Unwrap() []error { return []error{store.ErrCredentials, e.Err} }
