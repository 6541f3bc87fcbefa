// Package status implements `koshactl freeze status`: the fleet's freeze
// as the table holds it.
package status

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
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
		Use:   "status",
		Short: "Show the fleet's freeze: who, why, the reference and until when",
		Long: "Show the fleet's freeze item (freeze#fleet): frozen, lifted or expired, who set it, why,\n" +
			"the incident's reference, until when, and the earliest chaos header it lets through\n" +
			"once ended. Exit 0 whether or not the fleet is frozen; 5 when the store cannot be read.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return Run(c.Context(), f, opts) },
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output of freeze status (and the MCP server's
// freeze_status).
type Result struct {
	cmdenv.Envelope
	// Frozen is true while the freeze holds.
	Frozen bool `json:"frozen"`
	// Freeze is the item, null when none is recorded.
	Freeze *freeze.View `json:"freeze"`
}

// Read reads the freeze as -o json prints it.
func Read(ctx context.Context, f *cmdenv.Factory) (Result, error) {
	env, err := f.Env(ctx)
	if err != nil {
		return Result{}, err
	}
	fr, err := freeze.Read(ctx, env.Store)
	if err != nil {
		return Result{}, exitcode.Default(exitcode.Unavailable, err)
	}
	now := f.Clock.Now()
	res := Result{Envelope: env.Envelope("FreezeStatus")}
	if fr != nil {
		v := fr.View(now)
		res.Freeze, res.Frozen = &v, fr.FrozenAt(now)
	}
	return res, nil
}

// Run prints the freeze.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	res, err := Read(ctx, f)
	if err != nil {
		return err
	}
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, res)
	}
	v := res.Freeze
	if v == nil {
		fmt.Fprintf(ios.Out, "The fleet is not frozen in context %q (no freeze is recorded).\n", res.Context)
		return nil
	}
	now, tty := f.Clock.Now(), ios.IsStdoutTTY()
	fields := []cmdutil.Field{
		{Label: "State", Value: v.State},
		{Label: "Actor", Value: v.Actor},
		{Label: "Reason", Value: v.Reason},
	}
	if v.Ref != "" {
		fields = append(fields, cmdutil.Field{Label: "Reference", Value: v.Ref})
	}
	if v.SetAt != nil {
		fields = append(fields, cmdutil.Field{Label: "Set", Value: cmdutil.FormatTime(*v.SetAt, now, tty)})
	}
	until := "until lifted"
	if v.ExpiresAt != nil {
		until = cmdutil.FormatTime(*v.ExpiresAt, now, tty)
	}
	fields = append(fields, cmdutil.Field{Label: "Expires", Value: until})
	if v.LiftedAt != nil {
		fields = append(fields, cmdutil.Field{Label: "Lifted", Value: cmdutil.FormatTime(*v.LiftedAt, now, tty) + " by " + v.LiftedBy},
			cmdutil.Field{Label: "Lift reason", Value: v.LiftReason})
	}
	if v.ChaosNotBefore != nil {
		fields = append(fields, cmdutil.Field{Label: "Chaos from", Value: "headers minted at or after " + cmdutil.FormatTime(*v.ChaosNotBefore, now, tty)})
	}
	fields = append(fields, cmdutil.Field{Label: "Version", Value: strconv.FormatInt(v.Version, 10)})
	for _, p := range v.Malformed {
		fields = append(fields, cmdutil.Field{Label: "Malformed", Value: p.Attribute + ": " + p.Problem})
	}
	fmt.Fprintln(ios.Out, textsafe.Line(v.Summary))
	cmdutil.PrintFields(ios.Out, fields...)
	return nil
}
