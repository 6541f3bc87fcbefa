// Package version implements `koshactl version`.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/build"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// NewCmd builds the command. It loads no config and no credentials.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print koshactl's version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			in := build.Get()
			if output != cmdutil.FormatTable {
				return cmdutil.PrintStructured(f.IOStreams.Out, output, in)
			}
			dirty := ""
			if in.Modified {
				dirty = " (modified)"
			}
			fmt.Fprintf(f.IOStreams.Out, "koshactl %s\ncommit %s%s\nbuilt %s with %s\n", in.Version, in.Commit, dirty, in.Date, in.GoVersion)
			return nil
		},
	}
	cmdutil.AddOutputFlag(cmd, &output)
	cmdutil.NoInterruptHandling(cmd) // it only prints what the binary carries
	return cmd
}
