// Package view implements `koshactl config view`: print the configuration,
// the built-in local context included, its webhook tokens redacted.
package view

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/config/contextview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/notify"
)

// Options are the parsed flags.
type Options struct {
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "view",
		Short: "Print the configuration (built-in local context included)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return Run(f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the configuration: every context as the file holds it (an
// invalid one too, said to be invalid on stderr).
func Run(f *cmdenv.Factory, opts *Options) error {
	file, err := f.Config()
	if err != nil {
		return err
	}
	view := struct {
		Path           string                     `json:"path"`
		Exists         bool                       `json:"exists"`
		CurrentContext string                     `json:"current-context"`
		Contexts       map[string]*config.Context `json:"contexts"`
	}{file.Path(), file.Exists(), file.Current(), map[string]*config.Context{}}
	for _, n := range file.Names() {
		// An invalid context is shown as the file holds it (to be
		// repaired), and said to be invalid on stderr.
		c, _ := file.Lookup(n)
		view.Contexts[n] = redacted(c)
	}
	defer contextview.PrintInvalid(f, file)
	if opts.Output == cmdutil.FormatTable {
		opts.Output = cmdutil.FormatYAML
	}
	return cmdutil.PrintStructured(f.IOStreams.Out, opts.Output, view)
}

// redacted returns c for showing: a copy whose webhook URLs (each holds
// its webhook's token) read as notify.RedactURL shows them.
func redacted(c *config.Context) *config.Context {
	if c == nil || len(c.Notify) == 0 {
		return c
	}
	cp := *c
	cp.Notify = make([]config.NotifySink, len(c.Notify))
	for i, s := range c.Notify {
		if s.Webhook != nil && s.Webhook.URL != "" {
			w := *s.Webhook
			w.URL = notify.RedactURL(w.URL)
			s.Webhook = &w
		}
		cp.Notify[i] = s
	}
	return &cp
}
