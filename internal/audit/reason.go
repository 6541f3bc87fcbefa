package audit

import (
	"fmt"
	"strings"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// MaxReasonLen bounds a reason, in characters (not bytes: 400 × "é" is 400),
// so a pasted log does not end up in every record and every data-plane read
// of an override. It is the one limit for every reason koshactl stores:
// breaker overrides, rate-limit changes, chaos headers, drills and the
// dashboard.
const MaxReasonLen = 500

// ErrInvalidReason matches every error [ValidateReason] returns
// (errors.Is): commands report it as bad input (exit 2).
var ErrInvalidReason = exitcode.New(exitcode.Usage, "invalid reason")

// reasonError is a ValidateReason error: its text is the problem and the fix,
// and it matches ErrInvalidReason.
type reasonError struct{ err error }

func (e reasonError) Error() string   { return e.err.Error() }
func (e reasonError) Unwrap() []error { return []error{e.err, ErrInvalidReason} }

// ValidateReason checks an operator's reason (surrounding spaces ignored): at
// most [MaxReasonLen] characters of one line of plain text, by the rule of
// package textsafe (no control character, bidi control or invalid UTF-8). An
// empty reason passes; callers that require one say so in their own words.
// The error names the first bad character and its position, and matches
// [ErrInvalidReason].
func ValidateReason(reason string) error {
	r := strings.TrimSpace(reason)
	if n := textsafe.Len(r); n > MaxReasonLen {
		return reasonError{fmt.Errorf("reason is %d characters: keep it to %d and link to details instead", n, MaxReasonLen)}
	}
	if err := textsafe.Check(r); err != nil {
		return reasonError{fmt.Errorf("reason has %w: keep it to one line of plain text", err)}
	}
	return nil
}

// TruncateReason cuts a reason koshactl composes itself (a drill's) to
// [MaxReasonLen] characters, never splitting one.
func TruncateReason(reason string) string { return textsafe.Truncate(reason, MaxReasonLen) }

// ValidateActor checks the name an action is recorded under (the AWS caller
// identity, $KOSHACTL_ACTOR or user@host) by the same rule as a reason.
func ValidateActor(actor string) error {
	if err := textsafe.Check(actor); err != nil {
		return fmt.Errorf("actor \"%s\" has %w: name the operator in plain text", textsafe.Line(actor), err)
	}
	return nil
}
