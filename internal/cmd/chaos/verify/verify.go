package verify

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// maxInput bounds what verify reads from stdin. A header value is at most
// chaos.MaxValueLen bytes; the slack admits a header line or curl argument.
const maxInput = 64 << 10

// Options are the parsed flags and argument.
type Options struct {
	// Header is the argument: a value, a header line or a curl -H argument.
	Header string
	// Stdin is true when the header is read from stdin ("-", or no argument
	// with stdin not a terminal).
	Stdin   bool
	KeyFile string
	// Skew is the clock-skew allowance on the cap; 0 means none.
	Skew   time.Duration
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "verify [HEADER | -]",
		Short: "Check a chaos header as the data plane would, and explain each check",
		Long: heredoc.Doc(`
			Run every check the data plane runs on an X-Kosha-Chaos header, in its order,
			and explain each: syntax (naming the field at fault), target (one of the
			context's chaos targets), kid (a key the context holds: the current key, or
			the previous one after a rotation), signature (HMAC-SHA256, compared in
			constant time), expiry (now < exp, no allowance), cap (exp at most 15
			minutes ahead, plus a clock-skew allowance, 30s by default, for minting
			machines whose clocks run ahead), and freeze (the fleet is not frozen, and the
			header was issued, iat or for a v=1 header exp minus 15 minutes, at or after
			the end of the last freeze: it reads the context's freeze item).

			HEADER may be the bare value, the line "X-Kosha-Chaos: <value>", or the curl
			argument chaos sign -o curl prints (after --, since it starts with -H). With -
			(or no argument and a pipe) it is read from stdin; at a terminal, - asks for it
			on stderr and reads one line (paste, then Enter).

			Exits 0 when every check passes, 1 when one fails (the first failure is the
			error line on stderr). A key source or a freeze item that cannot be read is an
			error about it (its own exit code), not a verdict on the header.
		`),
		Example: heredoc.Doc(`
			koshactl chaos verify 'v=1;kid=M4ZWiFh7Mho;target=core-api;fault=latency;ms=250;p=0.5;exp=1767225900;jti=q8fZ0m3uXh7yLp2NaVbW4g;sig=85FkksUS9AQTN3DrS-nHy4ssIs4zRIcTH9SFcbikB18'
			koshactl chaos sign --target openai --fault error | koshactl chaos verify -
			koshactl chaos verify -- "-H 'X-Kosha-Chaos: v=1;kid=...'"
			koshactl chaos verify - --key-file ./chaos.key -o json < header.txt
		`),
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && args[0] != "-":
				opts.Header = args[0]
			case len(args) == 0 && f.IOStreams.IsStdinTTY():
				return cmdutil.Usagef("give the header to verify as an argument, or pipe it in: koshactl chaos sign ... | koshactl chaos verify -")
			default:
				opts.Stdin = true
			}
			if opts.Skew < 0 || opts.Skew > chaos.MaxSkew {
				return cmdutil.Usagef("--skew %s is outside 0..%s", human.Duration(opts.Skew), human.Duration(chaos.MaxSkew))
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	opts.Skew = chaos.DefaultSkew
	fl.Var(human.DurationFlag{D: &opts.Skew}, "skew", "clock-skew allowance on the 15-minute cap, 0.."+human.Duration(chaos.MaxSkew)+" (the data plane's setting)")
	cmdenv.AddKeyFileFlag(cmd, &opts.KeyFile)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON (and YAML) output of verify: the report of every
// check, with the context and key source it was checked against.
type Result struct {
	Kind      string `json:"kind"`
	Context   string `json:"context"`
	KeySource string `json:"key_source"`
	// MaxAhead and Skew are the cap and clock-skew allowance applied.
	MaxAhead string `json:"max_ahead"`
	Skew     string `json:"skew"`
	*chaos.Report
}

// Run verifies the header and prints the report. A header that fails a
// check is exit 1; a key source that cannot be read keeps its own exit code.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	input := opts.Header
	if opts.Stdin && f.IOStreams.IsStdinTTY() {
		// A person at a terminal: say what is expected, and take the one
		// line a header is (Enter ends it; no Ctrl-D needed).
		fmt.Fprintln(f.IOStreams.ErrOut, "Paste the X-Kosha-Chaos header and press Enter (Ctrl-C cancels):")
		line, err := iostreams.ReadLine(ctx, bufio.NewReaderSize(io.LimitReader(f.IOStreams.In, maxInput+1), 4096))
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read header from the terminal: %w", err)
		}
		input = line
	} else if opts.Stdin {
		// Interruptible: a pipe whose writer never finishes (or a terminal)
		// must not outlive Ctrl-C.
		b, err := iostreams.ReadAll(ctx, f.IOStreams.In, maxInput)
		if err != nil {
			return fmt.Errorf("read header from stdin: %w", err)
		}
		if len(b) > maxInput {
			return cmdutil.Usagef("stdin holds more than %d KiB: pipe in one header", maxInput>>10)
		}
		input = string(b)
	}
	value := chaos.ValueFromInput(input)

	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	targets, err := env.ChaosTargets()
	if err != nil {
		return err
	}
	src, err := env.KeySource(ctx, opts.KeyFile)
	if err != nil {
		return err
	}
	skew := cmp.Or(opts.Skew, -1) // -1: the library's "none"; its zero means the default
	v, err := chaos.NewVerifier(src, chaos.Options{Clock: f.Clock, Targets: targets, Skew: skew, Freeze: freeze.RuleFor(ctx, env.Store)})
	if err != nil {
		return cmdutil.UsageError(err)
	}
	r := v.Explain(ctx, value)
	res := Result{Kind: "ChaosVerifyReport", Context: env.Name, KeySource: src.Describe(),
		MaxAhead: v.MaxAhead().String(), Skew: v.Skew().String(), Report: r}
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(f.IOStreams.Out, opts.Output, res); err != nil {
			return err
		}
	} else if err := printTable(f, res); err != nil {
		return err
	}
	var ce *chaos.CheckError
	switch err := r.Err(); {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return exitcode.Wrap(exitcode.Error, err) // a check that did not pass, whatever it met
	default:
		return err
	}
}

var outcomeText = map[chaos.Outcome]string{
	chaos.OutcomePass:  "pass",
	chaos.OutcomeFail:  "FAIL",
	chaos.OutcomeSkip:  "skipped",
	chaos.OutcomeError: "ERROR",
}

func printTable(f *cmdenv.Factory, res Result) error {
	ios := f.IOStreams
	tw := cmdutil.NewTable(ios.Out)
	tw.Header(ios, "CHECK", "RESULT", "DETAIL")
	for _, c := range res.Checks {
		detail := c.Reason
		if c.Check == chaos.CheckSyntax && c.Outcome == chaos.OutcomeFail {
			detail = "field " + cmp.Or(c.Field, "(the whole value)") + ": " + detail
		}
		tw.Row(string(c.Check), outcomeText[c.Outcome], textsafe.OneLine(detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var ce *chaos.CheckError
	switch err := res.Err(); {
	case err == nil:
		h := res.Header
		fmt.Fprintf(ios.Out, "\nVALID: %s; kid %s, jti %s; expires %s\n", h.Summary(), h.KID, h.JTI,
			cmdutil.FormatTime(h.ExpTime(), res.Now, ios.IsStdoutTTY()))
	case errors.As(err, &ce):
		fmt.Fprintf(ios.Out, "\nINVALID: rejected by the %s check; the data plane would ignore this header\n", ce.Check)
	default:
		fmt.Fprintln(ios.Out, "\nUNDECIDED: the keys or the fleet's freeze could not be read; the data plane would ignore this header")
	}
	_, err := fmt.Fprintf(ios.Out, "checked against %s (context %q), cap %s plus %s clock-skew allowance\n",
		res.KeySource, res.Context, res.MaxAhead, res.Skew)
	return err
}
