package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/suggest"
)

// HintError is an error whose fix is printed on a line of its own after the
// one-line error (root.Run does): a "did you mean" a script's log shows
// apart from the error it explains.
type HintError struct {
	Err  error
	Hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// LinesError is an error made of independent lines, such as each problem
// of a file at its line: root.Run prints each on a line of its own (as
// "error: LINE"), where any other error is joined on one line. An error
// wrapping one keeps its prefix on the first line.
type LinesError interface {
	error
	ErrorLines() []string
}

// suggestionDistance is how far (in edits) a mistyped subcommand may be
// from the one it suggests: lst → list, stauts → status.
const suggestionDistance = 2

// GuardArgs makes every command of the tree under root say what it expected
// when its arguments are wrong, in one place instead of per command:
//
//   - a command group (a command with subcommands) given an unknown
//     subcommand exits 2 naming it, with the closest subcommands as a
//     "did you mean" hint on the next line; cobra would print the group's
//     help and exit 0 (a script carries on). A group with no command of
//     its own prints its help when given nothing, as before;
//
//   - a positional-argument error (cobra's "accepts 1 arg(s), received 0")
//     is a usage error that names what the command takes
//     ("usage: koshactl breaker get DEPENDENCY").
//
//   - `help TOPIC` of a topic that names no command exits 2 like an
//     unknown subcommand, with the hint; cobra would print the root's
//     usage and exit 0.
//
// Call it once the tree is complete.
func GuardArgs(root *cobra.Command) {
	guardArgs(root)
	if !root.HasParent() && root.HasSubCommands() {
		root.SetHelpCommand(helpCommand(root))
	}
}

// helpCommand is `help [command]`: the help of the command its arguments
// name, or a usage error naming the first word that names none.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type " + root.Name() + " help [path to command] for full details.",
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cur := helpTarget(root, args)
			if cur == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cur.Commands() {
				if sub.IsAvailableCommand() {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cur := root
			for _, a := range args {
				if !cur.HasSubCommands() {
					break // the rest are a leaf command's own arguments, as cobra reads them
				}
				next := subcommand(cur, a)
				if next == nil { // `help ... a` where group cur has no command a
					return didYouMean(cur, a, Usagef("unknown help topic %q: %q has no command %q (see %s --help)", a, cur.CommandPath(), a, cur.CommandPath()))
				}
				cur = next
			}
			cur.InitDefaultHelpFlag()
			return cur.Help()
		},
	}
}

// helpTarget is the command args name under root, or nil.
func helpTarget(root *cobra.Command, args []string) *cobra.Command {
	cur := root
	for _, a := range args {
		if cur = subcommand(cur, a); cur == nil {
			return nil
		}
	}
	return cur
}

// subcommand is c's subcommand named (or aliased) name, or nil.
func subcommand(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}

func guardArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		guardArgs(sub)
	}
	check := c.Args
	group := c.HasSubCommands()
	if group && !c.Runnable() {
		check = cobra.NoArgs
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	if check == nil {
		return // any arguments are the command's own to judge
	}
	c.Args = func(c *cobra.Command, args []string) error {
		err := check(c, args)
		switch {
		case err == nil:
			return nil
		case group && len(args) > 0:
			// group c given a command it does not have
			return didYouMean(c, args[0], Usagef("unknown command %q for %q (see %s --help)", args[0], c.CommandPath(), c.CommandPath()))
		}
		return Usagef("%v; usage: %s", err, strings.TrimSuffix(c.UseLine(), " [flags]"))
	}
}

// didYouMean is err with the subcommands of c closest to name as its hint,
// or err alone when none is near.
func didYouMean(c *cobra.Command, name string, err error) error {
	s := closestCommand(c, name)
	if s == "" {
		return err
	}
	return &HintError{Err: err, Hint: fmt.Sprintf("did you mean %s?", s)}
}

// closestCommand is the subcommand of c that name is most likely a typo of:
// the ones name is the start of (bre → breaker), else the nearest within
// suggestionDistance edits (lst → list, not get); "" if none is near.
func closestCommand(c *cobra.Command, name string) string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
			names = append(names, sub.Aliases...)
		}
	}
	var prefixed []string
	for _, n := range names {
		if strings.HasPrefix(strings.ToLower(n), strings.ToLower(name)) {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) > 0 {
		return strings.Join(prefixed, " or ")
	}
	return suggest.Closest(name, names, suggestionDistance+1, strings.ToLower)
}
