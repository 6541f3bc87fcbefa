package root_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/store"
)

func TestExitCodeMapsDomainErrors(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("doing it: %w", err) }
	cases := []struct {
		err  error
		want int
	}{
		{nil, exitcode.OK},
		{errors.New("boom"), exitcode.Error},
		{cmdutil.Usagef("bad"), exitcode.Usage},
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
		{cmdutil.WithCode(exitcode.Refused, errors.New("protected")), exitcode.Refused},
		{wrap(&identity.Error{Kind: identity.Unreachable, Err: errors.New("refused")}), exitcode.Unavailable},
		{wrap(&identity.Error{Kind: identity.NotServed, Err: errors.New("404")}), exitcode.Unavailable},
		{wrap(&identity.Error{Kind: identity.Throttled, Err: errors.New("429")}), exitcode.Unavailable},
		{wrap(&identity.Error{Kind: identity.Expired, Err: errors.New("ExpiredToken")}), exitcode.Auth},
		{wrap(&identity.Error{Kind: identity.Denied, Err: errors.New("AccessDenied")}), exitcode.Auth},
	}
	for _, tc := range cases {
		if got := root.ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
