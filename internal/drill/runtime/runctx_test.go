package runtime

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
)

func TestRedactHidesSecretsEverywhere(t *testing.T) {
	rc := NewRunContext(&drill.Drill{Name: "d"}, "r1", &Deps{}, nil)
	rc.AddSecret("supersecretvalue")
	rc.AddSecret("abc") // too short to redact safely
	rc.AddSecret("supersecretvalue-longer")
	got := rc.Redact("a supersecretvalue-longer b supersecretvalue c abc")
	if got != "a [redacted] b [redacted] c abc" {
		t.Errorf("redacted: %q", got)
	}
}
