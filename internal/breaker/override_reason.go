package breaker

import (
	"errors"
	"strings"

	"github.com/kosha-platform/koshactl/internal/audit"
)

// ErrReasonRequired reports a force-open without a reason. Every surface
// (the command's --reason, the dashboard's prompt) words the fix itself.
var ErrReasonRequired = errors.New("a reason is required")

// CheckForceReason applies the rule for a force-open's reason: there must be
// one (it is shown to everyone who looks at the override, and the data plane
// reads it), and it passes [audit.ValidateReason]. A clear's reason is
// optional: check it with audit.ValidateReason alone.
func CheckForceReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return ErrReasonRequired
	}
	return audit.ValidateReason(reason)
}
