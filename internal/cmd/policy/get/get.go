// Package get implements `koshactl policy get`: show the table's change
// policy.
package get

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags.
type Options struct {
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Show the table's change policy (exit 3 when it has none)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output.
type Result struct {
	Kind      string    `json:"kind"`
	SHA256    string    `json:"sha256"`
	Version   int64     `json:"version"`
	Since     time.Time `json:"since"`
	UpdatedAt time.Time `json:"updated_at"`
	Actor     string    `json:"actor"`
	Policies  []string  `json:"policies"`
	Text      string    `json:"text"`
}

// Run prints the policy: its text as stored (table output), or a document.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	p, err := env.Policies().Load(ctx)
	if err != nil {
		return err
	}
	if p == nil {
		return exitcode.Errorf(exitcode.NotFound, "the table of context %q has no change policy: every lever works as without one; an admin sets one with koshactl policy set FILE", env.Name)
	}
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, Result{Kind: "Policy", SHA256: p.SHA256, Version: p.Version, Since: p.Since,
			UpdatedAt: p.UpdatedAt, Actor: p.Actor, Policies: p.Set.Policies(), Text: p.Set.Text})
	}
	fmt.Fprintf(ios.ErrOut, "# version %d, sha256 %s, set by %s %s\n", p.Version, p.SHA256[:12], textsafe.Line(p.Actor),
		cmdutil.FormatTime(p.UpdatedAt, f.Clock.Now(), ios.IsStdoutTTY()))
	fmt.Fprint(ios.Out, textsafe.Text(p.Set.Text))
	return nil
}
