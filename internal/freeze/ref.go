package freeze

import (
	"fmt"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// ErrInvalidRef reports a freeze reference that does not follow the
// contract.
var ErrInvalidRef = exitcode.New(exitcode.Usage, "invalid freeze reference")

// ValidateRef checks a freeze's reference, the incident it is for: 1 to
// [MaxRefLen] characters of ASCII letters, digits and - _ . : / #,
// starting with a letter or digit, like INC-123, JIRA:OPS-9 or
// pagerduty/Q1ABC. It names the incident in every record and message, so
// it is plain and short.
func ValidateRef(ref string) error {
	if ref == "" || len(ref) > MaxRefLen {
		return fmt.Errorf("%w: %d characters: give 1 to %d, like INC-123", ErrInvalidRef, len(ref), MaxRefLen)
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '#'):
		default:
			return fmt.Errorf("%w %q: character %d is not a letter, digit or one of - _ . : / # (and the first must be a letter or digit), like INC-123",
				ErrInvalidRef, ref, i+1)
		}
	}
	return nil
}
