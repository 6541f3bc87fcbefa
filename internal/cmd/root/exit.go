package root

import (
	"context"
	"errors"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/store"
)

// ExitCode maps an error to the documented exit code (docs/exit-codes.md;
// the values are internal/exitcode's). It is the one place a domain error
// becomes a code: where the process ends. A command that chose its code
// returns a *cmdutil.ExitErr, which wins.
func ExitCode(err error) int {
	var ee *cmdutil.ExitErr
	switch {
	case err == nil:
		return exitcode.OK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, store.ErrOutcomeUnknown), errors.Is(err, audit.ErrAuditWrite):
		// Before cancellation and unavailability: an interrupted change
		// whose settling could not reach the store; an action outside the
		// table (a signed header, a rotated key) whose record failed.
		return exitcode.Unknown
	case errors.Is(err, context.Canceled):
		return exitcode.Interrupted
	case errors.Is(err, breaker.ErrConflict), errors.Is(err, store.ErrConditionFailed), errors.Is(err, config.ErrChanged),
		errors.Is(err, keys.ErrConflict):
		return exitcode.Conflict
	case errors.Is(err, keys.ErrTooSoon):
		return exitcode.Refused
	case errors.Is(err, identity.ErrBadActor), errors.Is(err, audit.ErrInvalidReason):
		return exitcode.Usage
	case errors.Is(err, store.ErrNotFound), errors.Is(err, config.ErrNoContext), errors.Is(err, keys.ErrNoKey):
		return exitcode.NotFound
	case errors.Is(err, store.ErrCredentials), errors.Is(err, keys.ErrCredentials), errors.Is(err, keys.ErrAccessDenied):
		return exitcode.Auth
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrThrottled), errors.Is(err, store.ErrTableMissing),
		errors.Is(err, keys.ErrThrottled), errors.Is(err, keys.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return exitcode.Unavailable
	case errors.Is(err, breaker.ErrInvalidDependency), errors.Is(err, config.ErrInvalid),
		errors.Is(err, chaos.ErrTTL), errors.Is(err, chaos.ErrInvalidKey), errors.Is(err, keys.ErrInsecureFile),
		errors.Is(err, keys.ErrNotRotatable), errors.Is(err, fsutil.ErrNotRegular), errors.Is(err, fsutil.ErrTooLarge):
		return exitcode.Usage
	}
	return exitcode.Error
}
