package keys_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/tui/keys"
)

func TestTheIssuesKeysAreBoundAndDocumented(t *testing.T) {
	k := keys.Default()
	inHelp := map[string]bool{}
	for _, col := range k.FullHelp() {
		for _, b := range col {
			for _, key := range b.Keys() {
				inHelp[key] = b.Help().Desc != ""
			}
		}
	}
	for _, key := range []string{"f", "c", "enter", "/", "r", "?", "q", "esc", "ctrl+c", "up", "down"} {
		if !inHelp[key] {
			t.Errorf("%q is not bound with help text", key)
		}
	}
	short := map[string]bool{}
	for _, b := range k.ShortHelp() {
		short[b.Help().Key] = true
	}
	for _, key := range []string{"f", "c", "enter", "/", "r", "?", "q"} {
		if !short[key] {
			t.Errorf("%q missing from the footer", key)
		}
	}
}
