package cmdutil

import (
	"errors"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// Usagef returns a usage error (exit 2) with a formatted message: a mistake
// in the command's flags, arguments or input.
func Usagef(format string, args ...any) error {
	return exitcode.Errorf(exitcode.Usage, format, args...)
}

// UsageError returns err as a usage error (exit 2): the command's input
// (a flag, an argument, a file it names) is what err says is wrong. nil
// stays nil.
func UsageError(err error) error {
	return exitcode.Wrap(exitcode.Usage, err)
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
