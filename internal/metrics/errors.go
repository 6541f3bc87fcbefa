package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Sentinel errors of a failed fetch, matched with errors.Is.
var (
	// ErrUnavailable: the source could not be reached, failed, throttled or
	// answered something unreadable. Retrying later may work.
	ErrUnavailable = errors.New("metrics source unavailable")
	// ErrDenied: credentials are missing or expired, or the caller may not
	// read the metrics (cloudwatch:GetMetricData).
	ErrDenied = errors.New("metrics source denied access")
)

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

// isNetError reports a transport failure (refused, reset, timeout, DNS).
func isNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}
