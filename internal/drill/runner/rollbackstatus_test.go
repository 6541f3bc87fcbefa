package runner

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// A rollback is "unaudited" (its lever back, its record missing) only when
// its change is known to have landed: a bucket write whose outcome the
// re-read could not settle matches audit.ErrAuditWrite for its exit code,
// yet its lever may still be moved, so it is failed, never "restored".
func TestRollbackStatusCallsOnlyALandedChangeRestored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"ok", nil, drill.StatusOK},
		{"record refused", fmt.Errorf("breaker openai was cleared, but %w", audit.ErrAuditWrite), drill.StatusUnaudited},
		{"record may be missing", fmt.Errorf("bucket alice was changed, but %w", audit.ErrAuditUnknown), drill.StatusUnaudited},
		{"bucket write unknown", fmt.Errorf("reset alice was interrupted: %w", ratelimit.ErrOutcomeUnknown), drill.StatusFailed},
		{"store down", errors.New("store unavailable"), drill.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, msg := rollbackStatus(tc.err, "prod"); got != tc.want {
				t.Errorf("rollbackStatus(%v) = %s (%s), want %s", tc.err, got, msg, tc.want)
			}
		})
	}
}
