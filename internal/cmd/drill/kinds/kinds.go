package kinds

import (
	"cmp"
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	drillkinds "github.com/kosha-platform/koshactl/internal/drill/kinds"
)

// Options are the parsed flags.
type Options struct {
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "kinds",
		Short: "List the step and condition kinds drill files may use, with their outputs",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Kind is one kind in the JSON output.
type Kind struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Outputs []string `json:"outputs,omitempty"`
	// Mutating is true for step kinds that register a rollback.
	Mutating bool `json:"mutating,omitempty"`
}

// Result is the JSON output.
type Result struct {
	Kind       string `json:"kind"`
	Steps      []Kind `json:"steps"`
	Conditions []Kind `json:"conditions"`
}

// Run lists the kinds.
func Run(_ context.Context, f *cmdenv.Factory, opts *Options) error {
	reg := drillkinds.Builtin()
	out := Result{Kind: "DrillKinds"}
	for _, k := range reg.StepKinds() {
		out.Steps = append(out.Steps, Kind{Name: k.Name(), Summary: k.Summary(), Outputs: k.Outputs(), Mutating: drill.Mutates(k)})
	}
	for _, k := range reg.ConditionKinds() {
		out.Conditions = append(out.Conditions, Kind{Name: k.Name(), Summary: k.Summary()})
	}
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, out)
	}
	tw := cmdutil.NewTable(ios.Out)
	tw.Header(ios, "STEP KIND", "ROLLBACK", "OUTPUTS", "WHAT IT DOES")
	for _, k := range out.Steps {
		rb := "-"
		if k.Mutating {
			rb = "auto"
		}
		tw.Row(k.Name, rb, cmp.Or(strings.Join(k.Outputs, ","), "-"), k.Summary)
	}
	tw.Row()
	tw.Header(ios, "CONDITION KIND", "", "", "WHAT IT CHECKS")
	for _, k := range out.Conditions {
		tw.Row(k.Name, "", "", k.Summary)
	}
	return tw.Flush()
}
