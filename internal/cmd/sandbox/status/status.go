// Package status implements `koshactl sandbox status`: a running sandbox's
// breakers per instance, downstreams, outbox and deferred screenings, once
// or live (--watch), read from its /status endpoint.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	sbx "github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultInterval is how often --watch refreshes.
const DefaultInterval = 2 * time.Second

// maxColumns is the most instances shown as columns; larger fleets get one
// letter per instance.
const maxColumns = 8

// Options are the parsed flags.
type Options struct {
	URL      string
	Watch    bool
	Interval time.Duration
	Wait     time.Duration
	Output   string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a running sandbox's breakers per instance (--watch for a live view)",
		Long: heredoc.Doc(`
			Read a running sandbox's /status and print each dependency's breaker on every
			instance (closed, half_open, open with the time left, FORCED), the instances'
			load, the downstreams' outages and knobs, the outbox and deferred screenings.

			With --watch the view refreshes every --interval until Ctrl-C; an unreachable
			sandbox is reported and retried. --wait waits for a sandbox that is starting.
		`),
		Example: heredoc.Doc(`
			koshactl sandbox status
			koshactl sandbox status --watch
			koshactl sandbox status --url http://127.0.0.1:9000 -o json
			koshactl sandbox status --wait 10s   # exit 0 once the sandbox answers
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.URL, "url", "http://"+sbx.DefaultListen, "the sandbox's base URL")
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "refresh every --interval until interrupted")
	opts.Interval = DefaultInterval
	fl.Var(human.DurationFlag{D: &opts.Interval}, "interval", "refresh interval for --watch")
	fl.Var(human.DurationFlag{D: &opts.Wait}, "wait", "wait up to this long for the sandbox to answer")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the status once, or every interval with --watch.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if opts.Interval < 100*time.Millisecond {
		return cmdutil.Usagef("--interval %s is too short: use 100ms or more", human.Duration(opts.Interval))
	}
	base := strings.TrimSuffix(opts.URL, "/")
	client := &http.Client{Timeout: 5 * time.Second}
	if opts.Wait > 0 {
		if err := waitReady(ctx, client, base, opts.Wait); err != nil {
			return err
		}
	}
	ios := f.IOStreams
	for {
		st, err := Fetch(ctx, client, base)
		switch {
		case err != nil && !opts.Watch:
			return err
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			if ios.IsStdoutTTY() {
				fmt.Fprint(textsafe.Raw(ios.Out), "\033[H\033[2J")
			}
			fmt.Fprintf(ios.Out, "%s  %v (retrying every %s)\n", time.Now().Format(time.TimeOnly), err, human.Duration(opts.Interval))
		case opts.Output != cmdutil.FormatTable:
			if err := cmdutil.PrintStructured(ios.Out, opts.Output, st); err != nil {
				return err
			}
		default:
			if opts.Watch && ios.IsStdoutTTY() {
				fmt.Fprint(textsafe.Raw(ios.Out), "\033[H\033[2J")
			}
			Print(ios.Out, base, st)
		}
		if !opts.Watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // Ctrl-C ends a watch normally
		case <-time.After(opts.Interval):
		}
		if !ios.IsStdoutTTY() && opts.Output == cmdutil.FormatTable {
			fmt.Fprintln(ios.Out)
		}
	}
}

// Fetch reads a sandbox's /status.
func Fetch(ctx context.Context, client *http.Client, base string) (sbx.Status, error) {
	var st sbx.Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+sbx.PathStatus, nil)
	if err != nil {
		return st, cmdutil.Usagef("--url %q: %v", base, err)
	}
	resp, err := client.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Nothing listens there: the sandbox is not running (exit 5), which
		// is no store's unavailability.
		return st, exitcode.Errorf(exitcode.Unavailable,
			"no sandbox is running at %s: start one with koshactl sandbox (or make demo), or give --url of the one you run", base)
	}
	if err != nil {
		return st, exitcode.Errorf(exitcode.Unavailable, "read sandbox status at %s: %w (is koshactl sandbox running there? see --url)", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, exitcode.Errorf(exitcode.Unavailable, "read sandbox status at %s: HTTP %s (is that a koshactl sandbox? see --url)", base, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st); err != nil {
		return st, fmt.Errorf("read sandbox status at %s: not a sandbox /status answer: %w", base, err)
	}
	return st, nil
}

// waitReady polls /healthz until it answers 200 or wait passes.
func waitReady(ctx context.Context, client *http.Client, base string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+sbx.PathHealth, nil)
		if err != nil {
			return cmdutil.Usagef("--url %q: %v", base, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New("HTTP " + resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for sandbox at %s: %w: no answer within %s (last: %v)", base, store.ErrUnavailable, wait, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cell renders a breaker for the table: open shows the time left, forced
// shouts.
func cell(b sbx.BreakerStatus) string {
	switch b.Value {
	case int(gauge.Open):
		return fmt.Sprintf("open %s", (time.Duration(b.RemainingOpenMs) * time.Millisecond).Round(100*time.Millisecond))
	case int(gauge.ForcedOpen):
		return "FORCED"
	default:
		return b.State
	}
}

// Print writes the human view of st.
func Print(w io.Writer, base string, st sbx.Status) {
	chaos := "off"
	if st.ChaosEnabled {
		chaos = "on"
	}
	fmt.Fprintf(w, "sandbox %s  context %s  profile %s  chaos %s  time x%g  up %s  traffic %g rps\n",
		textsafe.Line(base), textsafe.Line(st.Context), textsafe.Line(st.Profile), chaos, st.TimeScale, human.Age(st.Now.Sub(st.StartedAt)), st.Traffic.RPS)
	tw := cmdutil.NewTable(w)
	if len(st.Instances) <= maxColumns {
		row := []string{"DEPENDENCY"}
		for _, in := range st.Instances {
			row = append(row, strings.ToUpper(in.Name))
		}
		tw.Row(row...)
		for i, dep := range st.Dependencies {
			row = []string{dep}
			for _, in := range st.Instances {
				row = append(row, cell(in.Breakers[i]))
			}
			tw.Row(row...)
		}
		row = []string{"in flight / served"}
		for _, in := range st.Instances {
			row = append(row, fmt.Sprintf("%d / %d", in.InFlight, in.Served))
		}
		tw.Row(row...)
	} else {
		tw.Row("DEPENDENCY", "CLOSED", "HALF-OPEN", "OPEN", "FORCED", "INSTANCES (. closed, h half-open, O open, F forced)")
		for i, dep := range st.Dependencies {
			var counts [4]int
			strip := make([]byte, 0, len(st.Instances))
			for _, in := range st.Instances {
				v := min(max(in.Breakers[i].Value, 0), 3)
				counts[v]++
				strip = append(strip, ".hOF"[v]) // . closed, h half-open, O open, F forced
			}
			tw.Row(dep, strconv.Itoa(counts[0]), strconv.Itoa(counts[1]), strconv.Itoa(counts[2]), strconv.Itoa(counts[3]), string(strip))
		}
		var inFlight int
		var served uint64
		for _, in := range st.Instances {
			inFlight += in.InFlight
			served += in.Served
		}
		tw.Row(fmt.Sprintf("%d instances: %d in flight, %d served", len(st.Instances), inFlight, served))
	}
	_ = tw.Flush()
	var notes []string
	for _, d := range st.Downstreams {
		if d.Outage {
			notes = append(notes, d.Name+" outage")
		}
		if d.Knob != nil {
			note := fmt.Sprintf("%s knob %s p=%g", d.Name, d.Knob.Fault, d.Knob.P)
			if d.Knob.Ms > 0 {
				note += fmt.Sprintf(" %dms", d.Knob.Ms)
			}
			notes = append(notes, note)
		}
	}
	if len(notes) == 0 {
		notes = append(notes, "no outage, no knob")
	}
	fmt.Fprintf(w, "downstreams: %s\n", strings.Join(notes, "; "))
	fmt.Fprintf(w, "outbox: %d pending, %d published; deferred screenings: %d\n", st.Outbox.Pending, st.Outbox.Published, st.Deferred)
}
