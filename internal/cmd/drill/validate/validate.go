package validate

import (
	"context"
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/human"
)

// Options are the parsed flags and arguments.
type Options struct {
	Files  []string
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check drill files without running them; print FILE:LINE:COL: problem for each problem",
		Long: heredoc.Doc(`
			Parse each drill file and check it without contacting anything: unknown
			fields, wrong types, unknown step or condition kinds, missing fields, bad
			durations, timeouts that do not fit inside each other, and template
			references to variables, steps or outputs that do not exist at that point.

			Problems are printed one per line on stderr as FILE:LINE:COL: problem, the
			form editors and CI annotate; the exit code is 2 when any file has one.
			Environment variables are not checked: they are read when the drill runs.
		`),
		Example: heredoc.Doc(`
			koshactl drill validate docs/drills/*.yaml
			koshactl drill validate flood.yaml -o json
		`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Files = args
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output.
type Result struct {
	Kind  string       `json:"kind"`
	OK    bool         `json:"ok"`
	Files []FileResult `json:"files"`
}

// FileResult is one file's verdict.
type FileResult struct {
	File     string          `json:"file"`
	OK       bool            `json:"ok"`
	Name     string          `json:"name,omitempty"`
	Steps    int             `json:"steps"`
	Problems []drill.Problem `json:"problems"`
}

// Read validates the files as -o json prints it, printing nothing (the MCP
// server's drill_validate).
func Read(files []string) Result { return validate(files, func(*drill.Drill, []drill.Problem) {}) }

// validate parses each file with the built-in kinds, calling each with the
// drill (nil when it has problems) and its problems.
func validate(files []string, each func(*drill.Drill, []drill.Problem)) Result {
	reg := kinds.Builtin()
	out := Result{Kind: "DrillValidation", OK: true, Files: []FileResult{}}
	for _, file := range files {
		d, probs := drill.ParseFile(reg, file)
		fr := FileResult{File: file, OK: len(probs) == 0, Problems: append([]drill.Problem{}, probs...)}
		if d != nil {
			fr.Name, fr.Steps = d.Name, len(d.Steps)
		}
		out.OK = out.OK && fr.OK
		out.Files = append(out.Files, fr)
		each(d, probs)
	}
	return out
}

// Run validates the files. It never touches a context or a store.
func Run(_ context.Context, f *cmdenv.Factory, opts *Options) error {
	ios := f.IOStreams
	total := 0
	out := validate(opts.Files, func(d *drill.Drill, probs []drill.Problem) {
		total += len(probs)
		for _, p := range probs {
			fmt.Fprintln(ios.ErrOut, p.String())
		}
		if d != nil && opts.Output == cmdutil.FormatTable {
			fmt.Fprintf(ios.Out, "%s: ok (drill %s, %d steps, %d hypothesis checks, %d stop conditions)\n",
				d.File, d.Name, len(d.Steps), len(d.Hypothesis), len(d.StopConditions))
		}
	})
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, out); err != nil {
			return err
		}
	}
	if !out.OK {
		fmt.Fprintf(ios.ErrOut, "%s found\n", human.Count(int64(total), "problem"))
		return cmdutil.Usagef("%w: invalid drill file", cmdutil.ErrSilent)
	}
	return nil
}
