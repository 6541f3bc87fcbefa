package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Exit codes, documented in docs/exit-codes.md. Scripts may rely on them.
// The values live in internal/exitcode, shared with the domain packages
// that report an exit code (the drill journal).
const (
	ExitOK          = exitcode.OK          // success, including "already done"
	ExitError       = exitcode.Error       // an unexpected failure, or a check that did not pass
	ExitUsage       = exitcode.Usage       // bad flags, arguments or input; nothing was done
	ExitNotFound    = exitcode.NotFound    // the named thing does not exist
	ExitConflict    = exitcode.Conflict    // someone else holds it or changed it; nothing was done
	ExitUnavailable = exitcode.Unavailable // the store or an AWS service could not be reached, throttled, or the table is missing
	ExitAuth        = exitcode.Auth        // credentials missing, expired or denied
	ExitRefused     = exitcode.Refused     // a protected context needs confirmation (--yes) or it was declined; a safety check needs --force
	ExitAudit       = exitcode.Audit       // the change was made but its audit record could not be written
	ExitRollback    = exitcode.Rollback    // a drill's rollback failed or was abandoned: a lever may still be pulled
	ExitPartial     = exitcode.Partial     // a list showed what it could read; some stored items could not be read in full (each one reported)
	ExitUnconfirmed = exitcode.Unconfirmed // the change was made, but the fleet's gauges did not confirm it within --timeout
	ExitCancelled   = exitcode.Interrupted // interrupted (SIGINT)
)

// ExitErr carries an exit code with an error.
type ExitErr struct {
	Code int
	Err  error
}

func (e *ExitErr) Error() string { return e.Err.Error() }
func (e *ExitErr) Unwrap() error { return e.Err }

// WithCode attaches an exit code to err.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitErr{Code: code, Err: err}
}

// Usagef returns a usage error (exit 2) with a formatted message.
func Usagef(format string, args ...any) error {
	return &ExitErr{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// ErrSilent is returned by commands that already printed their failure and
// only need a non-zero exit (e.g. chaos verify explaining each check).
var ErrSilent = errors.New("silent failure")

// ExitCode maps an error to the documented exit code.
func ExitCode(err error) int {
	var ee *ExitErr
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, audit.ErrAuditWrite):
		// Before cancellation: an interrupt that stopped the audit append
		// after the change was made leaves a change without its record.
		return ExitAudit
	case errors.Is(err, context.Canceled):
		return ExitCancelled
	case errors.Is(err, breaker.ErrConflict), errors.Is(err, store.ErrConditionFailed), errors.Is(err, config.ErrChanged),
		errors.Is(err, keys.ErrConflict):
		return ExitConflict
	case errors.Is(err, keys.ErrTooSoon):
		return ExitRefused
	case errors.Is(err, identity.ErrBadActor), errors.Is(err, audit.ErrInvalidReason):
		return ExitUsage
	case errors.Is(err, store.ErrNotFound), errors.Is(err, config.ErrNoContext), errors.Is(err, keys.ErrNoKey):
		return ExitNotFound
	case errors.Is(err, store.ErrCredentials), errors.Is(err, keys.ErrCredentials), errors.Is(err, keys.ErrAccessDenied):
		return ExitAuth
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrThrottled), errors.Is(err, store.ErrTableMissing),
		errors.Is(err, keys.ErrThrottled), errors.Is(err, keys.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return ExitUnavailable
	case errors.Is(err, breaker.ErrInvalidDependency), errors.Is(err, config.ErrInvalid),
		errors.Is(err, chaos.ErrTTL), errors.Is(err, chaos.ErrInvalidKey), errors.Is(err, keys.ErrInsecureFile),
		errors.Is(err, keys.ErrNotRotatable), errors.Is(err, fsutil.ErrNotRegular), errors.Is(err, fsutil.ErrTooLarge):
		return ExitUsage
	}
	return ExitError
}

// WriteFailure is the error of a command whose writes went concurrently:
// the first failed write (its exit code wins, since something the operator
// asked for did not happen), else the first written change whose audit
// record failed (exit 8). A write failure also mentions an audit failure.
func WriteFailure(writeErr, auditErr error) error {
	switch {
	case writeErr == nil:
		return auditErr
	case auditErr != nil:
		return fmt.Errorf("%w; also, %v", writeErr, auditErr)
	}
	return writeErr
}
