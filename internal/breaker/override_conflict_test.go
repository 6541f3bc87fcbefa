package breaker_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A conflict says what holds the override in its own terms; how to replace
// it (a flag, a drill key) is each surface's hint.
func TestConflictErrorNamesNoSurface(t *testing.T) {
	held := breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Actor: "ops@cli", Reason: "by hand",
		Problems: []store.Problem{{Attribute: "expires_at", Problem: `found S "tomorrow"`}}}
	for _, e := range []*breaker.ConflictError{{Current: held}, {Current: held, Raced: true}} {
		msg := e.Error()
		if !strings.Contains(msg, `the item is malformed (expires_at: found S "tomorrow")`) || strings.Contains(msg, "--") ||
			strings.Contains(msg, "overwrite") || strings.Contains(msg, "breaker clear") {
			t.Errorf("conflict message: %s", msg)
		}
	}
}
