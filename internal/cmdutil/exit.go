package cmdutil

import (
	"errors"

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
