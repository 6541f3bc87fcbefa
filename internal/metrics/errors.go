package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Sentinel errors of a failed fetch, matched with errors.Is.
var (
	// ErrUnavailable: the source could not be reached, failed, throttled or
	// answered something unreadable. Retrying later may work.
	ErrUnavailable = exitcode.New(exitcode.Unavailable, "metrics source unavailable")
	// ErrDenied: credentials are missing or expired, or the caller may not
	// read the metrics (cloudwatch:GetMetricData).
	ErrDenied = exitcode.New(exitcode.Auth, "metrics source denied access")
)

// ErrNotCloudWatch matches a [*NotCloudWatchError]; it also matches
// ErrUnavailable.
var ErrNotCloudWatch = errors.New("endpoint serves no CloudWatch")

// NotCloudWatchError reports an endpoint that answered a CloudWatch call with
// something CloudWatch never sends (the SDK could not decode it): a
// DynamoDB-compatible server such as DynamoDB Local behind a context's one
// --endpoint-url for every service. Retrying there cannot help; the gauges
// must be pointed elsewhere.
type NotCloudWatchError struct {
	// Endpoint is the scheme and host that answered ("" if unknown).
	Endpoint string
	// Operation is the CloudWatch call (GetMetricData, DescribeAlarms).
	Operation string
	// Status is the HTTP status of the answer (0 if unknown).
	Status int
	// Alarms marks a read of alarms (a drill's alarm stop condition, the
	// dashboard's alarms), which only CloudWatch answers: the hint names
	// the CloudWatch endpoint alone, never a Prometheus /metrics.
	Alarms bool
}

func (e *NotCloudWatchError) Error() string {
	where := "the endpoint"
	if e.Endpoint != "" {
		where = e.Endpoint
	}
	status := ""
	if e.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Alarms {
		return fmt.Sprintf("%s serves no CloudWatch: its answer to %s%s is not CloudWatch's; alarms are read from CloudWatch only: "+
			"point them at a CloudWatch endpoint (koshactl config set-context CONTEXT --service-endpoint cloudwatch=URL)",
			where, e.Operation, status)
	}
	return fmt.Sprintf("%s serves no CloudWatch: its answer to %s%s is not CloudWatch's; point the gauges at a CloudWatch endpoint "+
		"(koshactl config set-context CONTEXT --service-endpoint cloudwatch=URL), or at a Prometheus /metrics "+
		"(set-context CONTEXT --prometheus-url URL, or --metrics-url URL for one command), or read the overrides alone with koshactl breaker list",
		where, e.Operation, status)
}

// Is makes errors.Is match ErrNotCloudWatch and ErrUnavailable.
func (e *NotCloudWatchError) Is(target error) bool {
	return target == ErrNotCloudWatch || errors.Is(ErrUnavailable, target)
}

// notCloudWatch returns a *NotCloudWatchError when err is the SDK failing
// to decode the answer to a CloudWatch call, else nil.
func notCloudWatch(err error) *NotCloudWatchError {
	var de *smithy.DeserializationError
	if !errors.As(err, &de) {
		return nil
	}
	e := &NotCloudWatchError{Operation: "the CloudWatch call"}
	var op *smithy.OperationError
	if errors.As(err, &op) {
		e.Operation = op.Operation()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		e.Status = re.Response.StatusCode
		if req := re.Response.Request; req != nil && req.URL != nil {
			e.Endpoint = (&url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host}).String()
		}
	}
	return e
}

// deniedCodes are the AWS error codes of missing or refused authorization.
var deniedCodes = map[string]bool{
	"AccessDenied": true, "AccessDeniedException": true, "UnauthorizedOperation": true,
	"UnrecognizedClientException": true, "InvalidClientTokenId": true, "ExpiredToken": true,
	"ExpiredTokenException": true, "SignatureDoesNotMatch": true, "MissingAuthenticationToken": true,
	"IncompleteSignature": true, "InvalidSignatureException": true,
}

// classifyAWS wraps an SDK error with ErrDenied or ErrUnavailable. Context
// cancellation and request validation errors pass through unchanged.
func classifyAWS(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, store.ErrCredentials) {
		return fmt.Errorf("%w: %w", ErrDenied, err)
	}
	if nc := notCloudWatch(err); nc != nil {
		return nc
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if deniedCodes[api.ErrorCode()] {
			return fmt.Errorf("%w: %w", ErrDenied, err)
		}
		if api.ErrorFault() == smithy.FaultClient && api.ErrorCode() != "Throttling" && api.ErrorCode() != "ThrottlingException" &&
			api.ErrorCode() != "LimitExceededException" {
			// A request CloudWatch refused as invalid: retrying will not help.
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
