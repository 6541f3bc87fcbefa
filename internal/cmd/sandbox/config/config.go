// Package config implements `koshactl sandbox config`: print the sandbox's
// effective configuration (defaults, a profile, a file) as a complete YAML
// file to start a configuration from.
package config

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	sbx "github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/human"
)

// RedactedToken stands for a token of the --config file in the output; it
// has spaces, so a file still holding it does not load.
const RedactedToken = "<not printed: your token here>" //nolint:gosec // G101: a placeholder that replaces a token, not one

// Options are the parsed flags.
type Options struct {
	Profile    string
	ConfigFile string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the sandbox's effective configuration as a YAML file",
		Long: heredoc.Doc(`
			Print every sandbox setting (the LLD's defaults, with --profile's downstreams and
			--config's file applied) as a complete YAML file. Save it, keep what you want to
			change, and pass it to koshactl sandbox --config FILE. Durations are LLD time;
			--time-scale divides them all. Rate limits are not in the file: the sandbox uses
			the context's (koshactl config set-context --ratelimit-capacity N).
		`),
		Example: heredoc.Doc(`
			koshactl sandbox config > sandbox.yaml
			koshactl sandbox config --profile flaky
			koshactl sandbox config --config sandbox.yaml   # check a file and show its result
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Profile, "profile", "", "downstream profile: "+strings.Join(sbx.ProfileNames(), "|"))
	cmd.Flags().StringVar(&opts.ConfigFile, "config", "", "configuration file to apply over the defaults")
	return cmd
}

// Run prints the configuration.
func Run(_ context.Context, f *cmdenv.Factory, opts *Options) error {
	cfg := sbx.DefaultConfig()
	if err := cfg.LoadFile(opts.ConfigFile, opts.Profile); err != nil {
		return cmdutil.UsageError(err)
	}
	if err := cfg.Validate(); err != nil {
		return cmdutil.UsageError(err)
	}
	redacted := 0
	for i, p := range cfg.Principals {
		if !slices.Contains(sbx.DefaultPrincipals(), p) {
			cfg.Principals[i].Token = RedactedToken
			redacted++
		}
	}
	b, err := cfg.MarshalFile()
	if err != nil {
		return err
	}
	w := f.IOStreams.Out
	fmt.Fprintln(w, "# koshactl sandbox configuration (koshactl sandbox --config FILE).")
	fmt.Fprintln(w, "# Durations are LLD time; time-scale divides them all. Every key is optional.")
	fmt.Fprintln(w, "# Profiles: "+strings.Join(sbx.ProfileNames(), ", ")+". Bearer tokens are secrets: the defaults are public, for loopback only.")
	if redacted > 0 {
		verb, them := "are", "them"
		if redacted == 1 {
			verb, them = "is", "it"
		}
		fmt.Fprintf(w, "# %s from --config %s not printed: put %s back where it says %q.\n", human.Count(int64(redacted), "token"), verb, them, RedactedToken)
	}
	_, err = w.Write(b)
	return err
}
