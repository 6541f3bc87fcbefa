package cmdutil

import (
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/exitcode"
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
	return &ExitErr{Code: exitcode.Usage, Err: fmt.Errorf(format, args...)}
}

// ErrSilent is returned by commands that already printed their failure and
// only need a non-zero exit (e.g. chaos verify explaining each check).
var ErrSilent = errors.New("silent failure")

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
