package exitcode_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
)

func TestOfMapsDomainErrors(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("doing it: %w", err) }
	cases := []struct {
		err  error
		want int
	}{
		{nil, exitcode.OK},
		{errors.New("boom"), exitcode.Error},
		{exitcode.Errorf(exitcode.Usage, "bad"), exitcode.Usage},
		{wrap(store.ErrNotFound), exitcode.NotFound},
		{wrap(config.ErrNoContext), exitcode.NotFound},
		{wrap(&breaker.ConflictError{}), exitcode.Conflict},
		{wrap(&store.ConditionError{PK: "x"}), exitcode.Conflict},
		{wrap(store.ErrTableMissing), exitcode.Unavailable},
		{wrap(store.ErrThrottled), exitcode.Unavailable},
		{wrap(store.ErrUnavailable), exitcode.Unavailable},
		{wrap(store.ErrCredentials), exitcode.Auth},
		{fmt.Errorf("rotated, but %w", fmt.Errorf("%w: %w", audit.ErrAuditWrite, store.ErrUnavailable)), exitcode.Unknown},
		{fmt.Errorf("force-open openai: %w: check with koshactl breaker get openai", store.ErrOutcomeUnknown), exitcode.Unknown},
		{fmt.Errorf("record: %w", audit.ErrAuditUnknown), exitcode.Unknown},
		{wrap(context.Canceled), exitcode.Interrupted},
		{wrap(breaker.ErrInvalidDependency), exitcode.Usage},
		{audit.ValidateReason(strings.Repeat("x", audit.MaxReasonLen+1)), exitcode.Usage},
		{fmt.Errorf("--%w", audit.ValidateReason("a\rb")), exitcode.Usage},
		{exitcode.Wrap(exitcode.Refused, errors.New("protected")), exitcode.Refused},
		{wrap(&identity.Error{Kind: identity.Unreachable, Err: errors.New("refused")}), exitcode.Unavailable},
		{wrap(&identity.Error{Kind: identity.NotServed, Err: errors.New("404")}), exitcode.Unavailable},
		{wrap(&identity.Error{Kind: identity.Throttled, Err: errors.New("429")}), exitcode.Unavailable},
		{wrap(&identity.Error{Kind: identity.Expired, Err: errors.New("ExpiredToken")}), exitcode.Auth},
		{wrap(&identity.Error{Kind: identity.Denied, Err: errors.New("AccessDenied")}), exitcode.Auth},
		{wrap(metrics.ErrDenied), exitcode.Auth},
		{wrap(metrics.ErrUnavailable), exitcode.Unavailable},
		{wrap(&metrics.NotCloudWatchError{Operation: "GetMetricData"}), exitcode.Unavailable},
		{wrap(metrics.ErrInvalidSource), exitcode.Usage},
		{wrap(keys.ErrTooSoon), exitcode.Refused},
		{wrap(&keys.ConflictError{}), exitcode.Conflict},
		{wrap(&keys.InsecureFileError{Path: "k"}), exitcode.Usage},
		{wrap(dynamo.ErrStackManaged), exitcode.Conflict},
		{wrap(config.ErrChanged), exitcode.Conflict},
		{wrap(store.ErrOutcomeUnknown), exitcode.Unknown},
		{wrap(context.DeadlineExceeded), exitcode.Unavailable},
		{fmt.Errorf("%w: %w", store.ErrOutcomeUnknown, context.Canceled), exitcode.Unknown},
		{wrap(approval.ErrExpired), exitcode.Closed},
		{wrap(approval.ErrClosed), exitcode.Closed},
		{wrap(approval.ErrHashMismatch), exitcode.Mismatch},
		{wrap(approval.ErrUnverified), exitcode.Auth},
		{wrap(approval.ErrSelf), exitcode.Refused},
		{wrap(approval.ErrPolicyDenied), exitcode.Refused},
		{wrap(policy.ErrStoredInvalid), exitcode.Refused},
		{wrap(policy.ErrInvalid), exitcode.Usage},
		// A failure the command decided wins over what it wraps.
		{exitcode.Errorf(exitcode.Refused, "confirmation not given: %w", context.Canceled), exitcode.Refused},
		{exitcode.Wrap(exitcode.Error, wrap(store.ErrNotFound)), exitcode.Error},
		// A default kind applies only when the error has none of its own.
		{exitcode.Default(exitcode.Unavailable, errors.New("eof")), exitcode.Unavailable},
		{exitcode.Default(exitcode.Unavailable, wrap(metrics.ErrDenied)), exitcode.Auth},
		// A guard reuses its cause's kind only where the contract names it.
		{runtime.GuardFailure(wrap(runtime.ErrNoMatch)), exitcode.NotFound},
		{runtime.GuardFailure(wrap(metrics.ErrDenied)), exitcode.Auth},
		{runtime.GuardFailure(wrap(store.ErrCredentials)), exitcode.Auth},
		{runtime.GuardFailure(wrap(runtime.ErrNoService)), exitcode.Usage},
		{runtime.GuardFailure(errors.New("unreadable")), exitcode.Unavailable},
		{runtime.GuardFailure(wrap(store.ErrConditionFailed)), exitcode.Unavailable},
	}
	for _, tc := range cases {
		if got := exitcode.Of(tc.err); got != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
