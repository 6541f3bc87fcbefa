package audit

import (
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/textsafe"
)

func TestValidateReasonCountsCharactersAndNamesTheBadOne(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in, want string
	}{
		{"400 accented characters are 400, not 800", strings.Repeat("é", 400), ""},
		{"exactly the limit", strings.Repeat("日", MaxReasonLen), ""},
		{"empty", "", ""},
		{"one over", strings.Repeat("a", MaxReasonLen+1), "reason is 501 characters: keep it to 500"},
		{"right-to-left override", "provider\u202eincident", `reason has a bidi control (\u202e) at character 9`},
		{"escape", "ok \x1b]0;pwned\x07", `reason has a control character (\x1b) at character 4`},
		{"carriage return", "a\rb", `reason has a control character (\r) at character 2`},
		{"not UTF-8", "caf\xe9", `reason has a byte that is not UTF-8 (\xe9) at character 4`},
		{"C1", "x\u009b2J", `reason has a control character (\u009b) at character 2`},
	} {
		err := ValidateReason(c.in)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q…", c.name, err, c.want)
		case err != nil && !errors.Is(err, ErrInvalidReason):
			t.Errorf("%s: %v does not match ErrInvalidReason (commands exit 2 on it)", c.name, err)
		case err != nil && !textsafe.IsSafe(err.Error()):
			t.Errorf("%s: the error itself carries the raw character: %q", c.name, err)
		}
	}
}

func TestTruncateReasonKeepsWholeCharacters(t *testing.T) {
	t.Parallel()
	r := TruncateReason(strings.Repeat("é", 600))
	if r != strings.Repeat("é", MaxReasonLen) {
		t.Errorf("truncated to %d bytes", len(r))
	}
	if err := ValidateReason(r); err != nil {
		t.Errorf("a truncated reason must pass: %v", err)
	}
}

func TestValidateActor(t *testing.T) {
	t.Parallel()
	if err := ValidateActor("arn:aws:sts::123456789012:assumed-role/ops/alice@example.com"); err != nil {
		t.Error(err)
	}
	err := ValidateActor("eve\x1b[2J")
	if err == nil || err.Error() != `actor "eve\x1b[2J" has a control character (\x1b) at character 4: name the operator in plain text` {
		t.Errorf("got %v", err)
	}
}
