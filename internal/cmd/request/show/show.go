// Package show implements `koshactl request show`.
package show

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/request/requestview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// Options are the parsed flags and argument.
type Options struct {
	ID     string
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one change request: the exact change, its hash, requester, approvals and expiry (exit 3 when there is none)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run shows the request.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	r, err := env.Approvals().Get(ctx, opts.ID)
	if err != nil {
		return err
	}
	now, ios := f.Clock.Now(), f.IOStreams
	r = requestview.Expire(ctx, env, ios.ErrOut, []approval.Request{r})[0]
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, requestview.Of(r, now)); err != nil {
			return err
		}
	} else {
		requestview.Print(ios.Out, r, now, ios.IsStdoutTTY())
		if r.StatusAt(now) == approval.StatusPending && r.Tampered == "" && r.Unproven == "" && len(r.SHA256) >= 12 {
			// What a reviewer does next, with the hash they reviewed.
			fmt.Fprintf(ios.ErrOut, "Someone other than the requester approves it, as shown, with koshactl request approve %s --sha256 %s "+
				"(add --comment TEXT to say why), or refuses it with koshactl request deny %s --reason TEXT\n", r.ID, r.SHA256[:12], r.ID)
		}
	}
	return requestview.Tampered(ios.ErrOut, r.Verification)
}
