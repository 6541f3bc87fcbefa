package id

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// Options are the parsed flags.
type Options struct {
	KeyFile string
	Output  string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "id",
		Short: "Print the ids of the context's chaos keys and their stages",
		Long: "Print the kid of the signing key (AWSCURRENT) and of the previous key still accepted\n" +
			"for verification (AWSPREVIOUS), with their Secrets Manager versions. Never the keys.\n" +
			"On the local context this generates the key on first use.",
		Example: "  koshactl chaos key id\n  koshactl chaos key id --key-file ./chaos.key -o json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmdenv.AddKeyFileFlag(cmd, &opts.KeyFile)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON (and YAML) output of key id.
type Result struct {
	Kind      string `json:"kind"`
	Context   string `json:"context"`
	KeySource string `json:"key_source"`
	// KeyOrigin is the setting that chose the source: --key-file,
	// chaos.key-file, chaos.key-env, chaos.secret-id or local context.
	KeyOrigin string   `json:"key_origin"`
	Keys      []KeyRef `json:"keys"`
}

// KeyRef names one key by id.
type KeyRef struct {
	Stage     string `json:"stage"`
	KID       string `json:"kid"`
	VersionID string `json:"version_id,omitempty"`
}

// Run reads the keys and prints their ids.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	src, err := env.KeySource(ctx, opts.KeyFile)
	if err != nil {
		return err
	}
	staged, err := src.Keys(ctx)
	if err != nil {
		return err
	}
	res := Result{Kind: "ChaosKeyIDs", Context: env.Name, KeySource: src.Describe(), KeyOrigin: src.Origin, Keys: []KeyRef{}}
	for _, s := range staged {
		res.Keys = append(res.Keys, KeyRef{Stage: s.Stage, KID: s.Key.KID(), VersionID: s.VersionID})
	}
	ios := f.IOStreams
	if src.GeneratedLocal() && len(res.Keys) > 0 {
		fmt.Fprintf(ios.ErrOut, "generated the local chaos key (kid %s): %s\n", res.Keys[0].KID, src.Describe())
	}
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, res)
	}
	tw := cmdutil.NewTable(ios.Out)
	tw.Header(ios, "STAGE", "KID", "VERSION", "USE")
	for _, k := range res.Keys {
		version, use := cmp.Or(k.VersionID, "-"), "verifies headers it signed"
		if k.Stage == res.Keys[0].Stage {
			use = "signs new headers, verifies"
		}
		tw.Row(k.Stage, k.KID, version, use)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "keys of %s (from %s; context %q)\n", src.Describe(), src.Origin, env.Name)
	return nil
}
