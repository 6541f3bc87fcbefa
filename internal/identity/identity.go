package identity

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultTimeout bounds one identity lookup, retries included, when
// [Resolver.Timeout] is zero.
const DefaultTimeout = 8 * time.Second

// MaxAttempts is how many times the identity call is tried in all; clients
// built with [ClientOptions] use it.
const MaxAttempts = 2

// STSAPI is the one STS call koshactl makes.
type STSAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

var _ STSAPI = (*sts.Client)(nil)

// Resolver establishes the acting identity of one context.
type Resolver struct {
	// STS is asked for the caller identity. Nil never asks: the identity is
	// the asserted one (local contexts, static dummy credentials).
	STS STSAPI
	// Endpoint is the URL STS is asked at, for messages; empty means AWS STS
	// in Region.
	Endpoint string
	// Region is the context's region, for messages.
	Region string
	// Context names the koshactl context, for the fix in messages.
	Context string
	// AllowUnverified is set on endpoint contexts (the store is not AWS): an
	// STS that cannot be reached or is not served there yields the asserted
	// identity instead of an error. Default false: STS is mandatory.
	AllowUnverified bool
	// Timeout bounds the lookup, attempts included. Zero means
	// [DefaultTimeout].
	Timeout time.Duration
	// Getenv reads $KOSHACTL_ACTOR and $USER; nil means os.Getenv.
	Getenv func(string) string
}

// ClientOptions bounds an STS client for the identity call: [MaxAttempts]
// attempts in all. Pass it to sts.NewFromConfig.
func ClientOptions(o *sts.Options) {
	o.RetryMaxAttempts = MaxAttempts
}

// Resolve returns who is acting. Its errors are a [*Error] (or the
// caller's context error when ctx ended).
func (r Resolver) Resolve(ctx context.Context) (audit.Identity, error) {
	if r.STS == nil {
		return r.Asserted()
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := r.STS.GetCallerIdentity(callCtx, &sts.GetCallerIdentityInput{})
	if err == nil && aws.ToString(out.Arn) == "" {
		err = errors.New("the answer names no caller ARN")
		return audit.Identity{}, &Error{Kind: NotServed, Endpoint: r.where(), Context: r.Context, Err: err}
	}
	if err == nil {
		arn, uid := aws.ToString(out.Arn), aws.ToString(out.UserId)
		if verr := audit.ValidateActor(arn); verr != nil {
			return audit.Identity{}, fmt.Errorf("sts GetCallerIdentity answered an identity that cannot be recorded: %w", verr)
		}
		if verr := audit.ValidateActor(uid); verr != nil || uid == "" {
			return audit.Identity{}, fmt.Errorf("sts GetCallerIdentity answered %s without a unique id koshactl can key its proofs by (%q)", textsafe.Line(arn), textsafe.Line(uid))
		}
		return audit.Identity{Actor: arn, Source: audit.ActorSTS, UserID: uid}, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return audit.Identity{}, ctxErr
	}
	kind := Classify(err)
	if r.AllowUnverified && (kind == Unreachable || kind == NotServed) {
		return r.Asserted()
	}
	return audit.Identity{}, &Error{Kind: kind, Endpoint: r.where(), Context: r.Context, Err: err}
}

// ErrBadActor is returned by [Resolver.Asserted] when the name the
// environment asserts is not plain text ([audit.ValidateActor]); it is a
// usage error: nothing is written.
var ErrBadActor = exitcode.New(exitcode.Usage, "the asserted actor cannot be recorded")

// Asserted is the identity the environment claims: $KOSHACTL_ACTOR when set
// (CI jobs name themselves), else user@host; always unverified. A name that
// is not plain text is refused with an error matching [ErrBadActor].
func (r Resolver) Asserted() (audit.Identity, error) {
	getenv := r.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	name, fromEnv := assertedName(getenv)
	if err := audit.ValidateActor(name); err != nil {
		if fromEnv {
			return audit.Identity{}, fmt.Errorf("%w: $KOSHACTL_ACTOR: %w", ErrBadActor, err)
		}
		return audit.Identity{}, fmt.Errorf("%w: %w; set $KOSHACTL_ACTOR to name yourself", ErrBadActor, err)
	}
	return audit.Identity{Actor: name, Source: audit.ActorUnverified}, nil
}

func assertedName(getenv func(string) string) (name string, fromEnv bool) {
	if a := getenv("KOSHACTL_ACTOR"); a != "" {
		return a, true
	}
	name = "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if v := getenv("USER"); v != "" {
		name = v
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return name + "@" + host, false
}

func (r Resolver) where() string {
	if r.Endpoint != "" {
		return r.Endpoint
	}
	if r.Region != "" {
		return "AWS STS (" + r.Region + ")"
	}
	return "AWS STS"
}

// Kind classifies an STS failure.
type Kind int

// The kinds of STS failure.
const (
	// Unclassified is a failure none of the others describe.
	Unclassified Kind = iota
	// Unreachable: no answer (refused, reset, DNS, timeout) or a server error.
	Unreachable
	// NotServed: the endpoint answers, but not as STS (404, unknown operation).
	NotServed
	// Throttled: STS refused the rate (Throttling, HTTP 429).
	Throttled
	// Denied: STS rejected the credentials or the request signature.
	Denied
	// Expired: the credentials' session has expired.
	Expired
)

// String names the kind.
func (k Kind) String() string {
	if k < Unclassified || k > Expired {
		k = Unclassified
	}
	return [...]string{"unclassified", "unreachable", "not served", "throttled", "denied", "expired"}[k]
}

var codeKinds = map[string]Kind{
	"Throttling": Throttled, "ThrottlingException": Throttled, "ThrottledException": Throttled,
	"RequestLimitExceeded": Throttled, "TooManyRequestsException": Throttled, "RequestThrottled": Throttled,
	"PriorRequestNotComplete": Throttled, "SlowDown": Throttled,
	"ExpiredToken": Expired, "ExpiredTokenException": Expired, "TokenRefreshRequired": Expired,
	"InvalidClientTokenId": Denied, "SignatureDoesNotMatch": Denied, "AccessDenied": Denied,
	"AccessDeniedException": Denied, "UnrecognizedClientException": Denied, "IncompleteSignature": Denied,
	"InvalidAccessKeyId": Denied, "AuthFailure": Denied, "RequestExpired": Denied,
	"UnknownOperationException": NotServed, "UnknownOperation": NotServed, "InvalidAction": NotServed,
	"NotImplemented": NotServed, "UnsupportedOperation": NotServed,
}

// Classify says which kind of STS failure err is.
func Classify(err error) Kind {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if k, ok := codeKinds[ae.ErrorCode()]; ok {
			return k
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch s := re.HTTPStatusCode(); {
		case s == 0:
			return Unreachable
		case s == http.StatusNotFound, s == http.StatusMethodNotAllowed, s == http.StatusNotImplemented:
			return NotServed
		case s == http.StatusTooManyRequests:
			return Throttled
		case s == http.StatusForbidden, s == http.StatusUnauthorized:
			return Denied
		case s >= 500:
			return Unreachable
		}
	}
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &sendErr), errors.As(err, &netErr), errors.As(err, &dnsErr), errors.Is(err, context.DeadlineExceeded):
		return Unreachable
	}
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		return NotServed // it answered 2xx, but not in STS's protocol
	}
	return Unclassified
}

// Error is a classified STS failure. It matches store.ErrUnavailable
// (Unreachable, NotServed), store.ErrThrottled (Throttled, which also matches
// ErrUnavailable) or store.ErrCredentials (Denied, Expired, Unclassified),
// and the SDK's error.
type Error struct {
	Kind Kind
	// Endpoint is where STS was asked (a URL, or "AWS STS (region)").
	Endpoint string
	// Context names the koshactl context, for the fix.
	Context string
	// Err is the SDK's error.
	Err error
}

// Error is one line: what failed, where, and the fix.
func (e *Error) Error() string {
	detail := detailOf(e.Err)
	ctxName := e.Context
	if ctxName == "" {
		ctxName = "CONTEXT"
	}
	const lead = "who is acting could not be established: "
	switch e.Kind {
	case Unreachable:
		return fmt.Sprintf("%sSTS at %s could not be reached (%s); check the network and that the endpoint is up, "+
			"or name a reachable STS with `koshactl config set-context %s --service-endpoint sts=URL` (or AWS_ENDPOINT_URL_STS)",
			lead, e.Endpoint, detail, ctxName)
	case NotServed:
		return fmt.Sprintf("%sSTS is not served at %s (%s); point STS at a server that serves it with "+
			"`koshactl config set-context %s --service-endpoint sts=URL` (or AWS_ENDPOINT_URL_STS)", lead, e.Endpoint, detail, ctxName)
	case Throttled:
		return fmt.Sprintf("%sSTS at %s throttled GetCallerIdentity after %d attempts (%s); wait a few seconds and re-run",
			lead, e.Endpoint, MaxAttempts, detail)
	case Denied:
		return fmt.Sprintf("%sSTS at %s rejected the credentials (%s); check which credentials are in use "+
			"(AWS_PROFILE, AWS_ACCESS_KEY_ID, the context's profile) and that they are valid for this account", lead, e.Endpoint, detail)
	case Expired:
		return fmt.Sprintf("%sthe credentials have expired (STS at %s: %s); refresh them (`aws sso login`, or a new session token) and re-run",
			lead, e.Endpoint, detail)
	case Unclassified:
	}
	return fmt.Sprintf("%sSTS GetCallerIdentity at %s failed (%s); check the credentials and the endpoint, then re-run", lead, e.Endpoint, detail)
}

// Unwrap returns the store sentinel for the kind and the SDK's error.
func (e *Error) Unwrap() []error {
	var kind error
	switch e.Kind {
	case Unreachable, NotServed:
		kind = store.ErrUnavailable
	case Throttled:
		kind = store.ErrThrottled
	default:
		kind = store.ErrCredentials
	}
	return []error{kind, e.Err}
}

// detailOf is the SDK error's gist, quoted where it carries text from the
// server so nothing it sent reaches a terminal raw.
func detailOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		if m := ae.ErrorMessage(); m != "" {
			return strconv.QuoteToGraphic(code + ": " + m)
		}
		return strconv.QuoteToGraphic(code)
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		return fmt.Sprintf("HTTP %d", re.HTTPStatusCode())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return strconv.QuoteToGraphic(strings.Join(strings.Fields(err.Error()), " "))
}
