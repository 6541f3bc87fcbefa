package root

import (
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// The groups table names each top-level command exactly as the command
// names itself: Run builds a group alone for the names in the table, so a
// name the command does not answer to would run it where the whole tree
// would refuse.
func TestGroupsNameTheirCommands(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var started bool
	// The common groups, and the full program's.
	f := &cmdenv.Factory{IOStreams: ios, Groups: factory.Groups}
	cmds := NewCmd(f, &started).Commands()
	if len(cmds) != len(allGroups(f)) {
		t.Fatalf("the tree has %d top-level commands, the groups tables %d", len(cmds), len(allGroups(f)))
	}
	answers := map[string][]string{} // Commands() is sorted by name, the table in the tree's order
	for _, c := range cmds {
		answers[c.Name()] = append([]string{c.Name()}, c.Aliases...)
	}
	for _, g := range allGroups(f) {
		if names := answers[g.Names[0]]; !slices.Equal(names, g.Names) {
			t.Errorf("the groups table says %q, the command answers to %q", g.Names, names)
		}
	}
	for _, args := range [][]string{nil, {}, {"--context"}, {"--context", "dev"}, {"help", "version"}, {"__complete", "breaker"},
		{"completion", "bash"}, {"no-such-group"}, {"--no-such-flag", "version"}, {"-o", "json", "version"}} {
		if g := groupOf(f, args); g != "" {
			t.Errorf("groupOf(%q) = %q, want the whole tree", args, g)
		}
	}
	// Past the global flags, to the group.
	for args, want := range map[string]string{"rl get": "rl", "--context dev version": "version", "--context=dev --debug breaker list": "breaker",
		"--no-color --no-headers=true audit list": "audit", "mcp": "mcp"} {
		if g := groupOf(f, strings.Fields(args)); g != want {
			t.Errorf("groupOf(%s) = %q, want %q", args, g, want)
		}
	}
	if g := groupOf(&cmdenv.Factory{}, []string{"mcp"}); g != "" {
		t.Errorf("groupOf(mcp) = %q in a program without the group, want the whole tree", g)
	}
}
