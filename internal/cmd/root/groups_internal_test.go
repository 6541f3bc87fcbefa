package root

import (
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// The groups table names each top-level command exactly as the command
// names itself: Run builds a group alone for the names in the table, so a
// name the command does not answer to would run it where the whole tree
// would refuse.
func TestGroupsNameTheirCommands(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var started bool
	cmds := NewCmd(&cmdenv.Factory{IOStreams: ios}, &started).Commands()
	if len(cmds) != len(groups) {
		t.Fatalf("the tree has %d top-level commands, the groups table %d", len(cmds), len(groups))
	}
	answers := map[string][]string{} // Commands() is sorted by name, the table in the tree's order
	for _, c := range cmds {
		answers[c.Name()] = append([]string{c.Name()}, c.Aliases...)
	}
	for _, g := range groups {
		if names := answers[g.names[0]]; !slices.Equal(names, g.names) {
			t.Errorf("the groups table says %q, the command answers to %q", g.names, names)
		}
	}
	for _, args := range [][]string{nil, {}, {"--context", "dev", "version"}, {"help", "version"}, {"__complete", "breaker"}, {"completion", "bash"}, {"no-such-group"}} {
		if g := groupOf(args); g != "" {
			t.Errorf("groupOf(%q) = %q, want the whole tree", args, g)
		}
	}
	if g := groupOf([]string{"rl", "get"}); g != "rl" {
		t.Errorf("groupOf(rl get) = %q", g)
	}
}
