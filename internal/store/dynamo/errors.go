package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Error codes by class. DynamoDB and the endpoints that mimic it report
// these in the response's __type.
var (
	throttleCodes = codes(
		"ProvisionedThroughputExceededException", "ThrottlingException", "Throttling",
		"RequestLimitExceeded", "TooManyRequestsException", "LimitExceededException",
	)
	credentialCodes = codes(
		"UnrecognizedClientException", "InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException",
		"AccessDenied", "AccessDeniedException", "InvalidSignatureException", "SignatureDoesNotMatch",
		"MissingAuthenticationToken", "MissingAuthenticationTokenException", "IncompleteSignature",
		"IncompleteSignatureException", "InvalidAccessKeyId", "RequestExpired", "NotAuthorized",
	)
	serverCodes = codes("InternalServerError", "InternalFailure", "ServiceUnavailable", "ServiceUnavailableException")
)

func codes(cs ...string) map[string]bool {
	m := make(map[string]bool, len(cs))
	for _, c := range cs {
		m[c] = true
	}
	return m
}

// classify turns an SDK error from operation op on pk into the store's
// error classes.
func (s *Store) classify(ctx context.Context, op, pk string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ce := &store.ConditionError{PK: pk}
		if len(ccf.Item) > 0 {
			if cur, uerr := unmarshal(ccf.Item); uerr == nil {
				ce.Current = cur
			}
		}
		return ce
	}
	// Already classified, by the credential provider awsconf installs.
	if errors.Is(err, store.ErrCredentials) || errors.Is(err, store.ErrUnavailable) {
		return fmt.Errorf("%s on %s: %w", op, s.Describe(), err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		switch {
		case code == "ResourceNotFoundException":
			return fmt.Errorf("%s: table %q not found %s (create it with `koshactl store init`): %w: %w",
				op, s.table, s.where, store.ErrTableMissing, err)
		case throttleCodes[code]:
			return fmt.Errorf("%s on %s: %w: %w", op, s.Describe(), store.ErrThrottled, err)
		case credentialCodes[code]:
			return fmt.Errorf("%s on %s: the credentials were refused (%s); check the context's profile, "+
				"run `aws sso login` if the session expired, and that the role may use the table: %w: %w",
				op, s.Describe(), code, store.ErrCredentials, err)
		case serverCodes[code]:
			return fmt.Errorf("%s: %s answered with a server error: %w: %w", op, s.Describe(), store.ErrUnavailable, err)
		}
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() >= 500 {
		return fmt.Errorf("%s: %s answered with HTTP %d: %w: %w", op, s.Describe(), respErr.HTTPStatusCode(), store.ErrUnavailable, err)
	}
	if s.timeout > 0 && isTimeout(err) {
		return fmt.Errorf("%s: %s did not answer within the request timeout (%s): %w; "+
			"for a slow endpoint or a large change allow more with --request-timeout (up to 1h), or the context's request-timeout "+
			"(koshactl config set-context NAME --request-timeout 1m): %w",
			op, s.Describe(), human.Duration(s.timeout), store.ErrUnavailable, err)
	}
	if isUnreachable(err) {
		return fmt.Errorf("%s: cannot reach %s: %w: %w", op, s.Describe(), store.ErrUnavailable, err)
	}
	// The SDK's signer reports a credential provider's failure only in text.
	if msg := err.Error(); strings.Contains(msg, "failed to retrieve credentials") ||
		strings.Contains(msg, "failed to refresh cached credentials") || strings.Contains(msg, "get identity") {
		return fmt.Errorf("%s on %s: %w: %w", op, s.Describe(), store.ErrCredentials, err)
	}
	return fmt.Errorf("%s on %s: %w", op, s.Describe(), err)
}

// isTimeout reports a request the HTTP client gave up on at its own
// deadline (the caller's context is live: classify checked it first).
func isTimeout(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var canceled *smithy.CanceledError
	return errors.As(err, &canceled) || errors.Is(err, context.DeadlineExceeded)
}

// isUnreachable reports a failure to send the request or get its answer:
// connection refused, DNS, TLS (every net.Error: *net.OpError,
// *net.DNSError), timeouts.
func isUnreachable(err error) bool {
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	return errors.As(err, &sendErr) || errors.As(err, &netErr) || isTimeout(err)
}
