// Package converge is the breaker commands' --wait: its flags, waiting
// until the fleet's gauges confirm a change (the rule is metrics.Judge), the
// convergence view and the progress line.
package converge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// WaitOptions are the flags of `--wait`: wait until the fleet's gauges
// confirm the change (the rule is metrics.Judge).
type WaitOptions struct {
	Wait       bool
	Timeout    time.Duration
	Instances  bool
	MetricsURL string
}

// AddWaitFlags registers --wait, --timeout, --instances and --metrics-url.
func AddWaitFlags(cmd *cobra.Command, o *WaitOptions) {
	fl := cmd.Flags()
	fl.BoolVar(&o.Wait, "wait", false, "after the write, wait until the fleet's breaker_state gauges confirm it (exit 11 if they do not within --timeout)")
	fl.Var(human.DurationFlag{D: &o.Timeout}, "timeout", "how long --wait waits (default: the gauge source's bound plus a margin: 11s on a scrape, 5m06s on CloudWatch)")
	fl.BoolVar(&o.Instances, "instances", false, "with --wait on CloudWatch, read the per-instance breakdown to name stragglers (one metric per instance series)")
	fl.StringVar(&o.MetricsURL, "metrics-url", "", "scrape this Prometheus endpoint instead of the context's metrics source (the impact's call rates; --wait's gauges)")
}

// Check refuses flag combinations that cannot work, before anything is
// written.
func (o *WaitOptions) Check(cmd *cobra.Command, dryRun bool) error {
	return levercmd.CheckWait(cmd, o.Wait, dryRun, o.Timeout, "give a duration like 30s, or leave it out for the source's bound plus a margin",
		"timeout", "instances")
}

// Waiter makes --metrics-url the source of the change's impact's call
// rates, in place of the context's (a URL that cannot be scraped is
// refused, exit 2), and with --wait builds the context's gauge source and a
// waiter on it (nil without --wait): both before anything is read, so a
// source that cannot work is refused with nothing written.
func (o *WaitOptions) Waiter(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env) (*metrics.Waiter, error) {
	if err := gaugeenv.MeasureImpact(env, o.MetricsURL); err != nil || !o.Wait {
		return nil, err
	}
	src, err := gaugeenv.Source(ctx, env, o.MetricsURL)
	if err != nil {
		return nil, fmt.Errorf("--wait: %w", err)
	}
	// A source on this machine that refuses the connection is a sandbox
	// that is not running: said at once, with how to start it, nothing
	// written, rather than after the whole timeout.
	if hint := src.Hint(); hint != "" {
		if _, err := src.Fetch(ctx, metrics.FetchRequest{Window: metrics.WaitWindow}); errors.Is(err, syscall.ECONNREFUSED) {
			return nil, exitcode.Errorf(exitcode.Unavailable, "--wait: nothing serves the gauges at %s (%s); nothing was written", src.Describe(), hint)
		}
	}
	return &metrics.Waiter{Gauges: src, Clock: f.Clock, Timeout: o.Timeout, Instances: o.Instances}, nil
}

// ConvergenceView is the JSON of a wait (docs/contracts/cli-output.md).
type ConvergenceView struct {
	// Confirmed is true when every dependency was confirmed.
	Confirmed      bool                    `json:"confirmed"`
	Source         string                  `json:"source"`
	BoundSeconds   float64                 `json:"bound_seconds"`
	TimeoutSeconds float64                 `json:"timeout_seconds"`
	ElapsedSeconds float64                 `json:"elapsed_seconds"`
	Polls          int                     `json:"polls"`
	Error          *string                 `json:"error"`
	Dependencies   []DependencyConvergence `json:"dependencies"`
}

// DependencyConvergence is one dependency's verdict.
type DependencyConvergence struct {
	Dependency string          `json:"dependency"`
	Goal       metrics.Goal    `json:"goal"`
	Verdict    metrics.Verdict `json:"verdict"`
	Confirmed  bool            `json:"confirmed"`
	// Instances and InstancesConfirmed count instances when PerInstance;
	// otherwise they are CloudWatch's SampleCount of the period judged.
	Instances          int      `json:"instances"`
	InstancesConfirmed int      `json:"instances_confirmed"`
	PerInstance        bool     `json:"per_instance"`
	Stragglers         []string `json:"stragglers"`
	// Unknown names the instances whose reading cannot be judged (a value
	// that is not a state, a stale sample, a duplicated series, stopped
	// reporting), and why: they keep the change unconfirmed.
	Unknown []metrics.Doubt `json:"unknown"`
	// TimeToConvergeSeconds is from the write to the poll that confirmed
	// it; null when not confirmed.
	TimeToConvergeSeconds *float64 `json:"time_to_converge_seconds"`
	Note                  string   `json:"note,omitempty"`
}

// Wait runs the waiter over changes, showing a live progress line on stderr
// when it is a terminal (nothing otherwise), and returns the result's view
// and the error to exit with: nil when confirmed; exit 11 (unconfirmed)
// naming the stragglers; 5 or 6 when the gauges could never be read.
func Wait(ctx context.Context, f *cmdenv.Factory, w *metrics.Waiter, changes []metrics.Change) (*ConvergenceView, error) {
	p := &progressLine{w: f.IOStreams.ErrOut, on: f.IOStreams.IsStderrTTY()}
	read := false // some fetch succeeded
	w.Progress = func(wp metrics.WaitProgress) {
		read = read || wp.Err == nil
		p.show(wp)
	}
	res, err := w.Wait(ctx, changes)
	p.clear()
	v := &ConvergenceView{Confirmed: res.Confirmed, Source: w.Gauges.Describe(), BoundSeconds: metrics.LagOf(w.Gauges).Seconds(),
		TimeoutSeconds: res.Timeout.Seconds(), ElapsedSeconds: res.Elapsed.Seconds(), Polls: res.Polls, Dependencies: []DependencyConvergence{}}
	for _, cv := range res.Convergences {
		d := DependencyConvergence{Dependency: cv.Dependency, Goal: cv.Goal, Verdict: cv.Verdict, Confirmed: cv.Verdict == metrics.Confirmed,
			Instances: cv.Instances, InstancesConfirmed: cv.Confirmed, PerInstance: cv.PerInstance, Stragglers: append([]string{}, cv.Stragglers...), Note: cv.Note}
		d.Unknown = append([]metrics.Doubt{}, cv.Unknown...)
		if d.Confirmed {
			s := cv.Elapsed.Seconds()
			d.TimeToConvergeSeconds = &s
		}
		v.Dependencies = append(v.Dependencies, d)
	}
	if err == nil {
		return v, nil
	}
	if ctx.Err() != nil {
		// Interrupted (SIGINT): the wait is the only part not done. The
		// callers wait only after the change and its audit record are written
		// (a failed append is their error, and wins over this one).
		return v, exitcode.Errorf(exitcode.Interrupted,
			"interrupted while waiting for the fleet to confirm: the change was written and audited, its convergence not confirmed; see koshactl breaker status")
	}
	msg := textsafe.OneLine(err.Error())
	v.Error = &msg
	if !read {
		// Unavailable, unless the source says it was denied (auth).
		return v, exitcode.Default(exitcode.Unavailable, fmt.Errorf("the change was written, but the gauges could not be read to confirm it: %w", res.FetchErr))
	}
	var parts []string
	for _, cv := range metrics.Pending(res.Convergences) {
		parts = append(parts, cv.Dependency+" "+cv.Summary())
	}
	return v, exitcode.Errorf(exitcode.Unconfirmed, "the change was written, but the fleet did not confirm it within %s: %s (see koshactl breaker status)",
		human.Duration(res.Timeout), strings.Join(parts, "; "))
}

// Waited is what a breaker command's result says of its --wait: the
// gauges' view, none without it.
type Waited struct {
	Convergence *ConvergenceView `json:"convergence,omitempty"`
}

// Finish is a breaker command's end once its change is made
// ([levercmd.End]): the wait for the fleet's gauges, with --wait (w set,
// changes to wait for), its view in waited (-o json|yaml) or its lines (the
// table); then more to do once the change is written and confirmed (then:
// a clear's bake, nil for none), run only when neither the change nor the
// wait failed, which may fill the document in and prints its own lines in
// the table form. It returns the change's failure first, then the wait's,
// then then's.
func Finish(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, fl levercmd.Flags, w *metrics.Waiter, changes []metrics.Change,
	ev *notify.Event, failure error, doc any, waited *Waited, text string, then func() error) error {
	var waitErr, thenErr error
	var end func() error
	if wait := w != nil && len(changes) > 0; wait || then != nil {
		end = func() error {
			if wait {
				// The changes and their audit records are written; now the fleet.
				var view *ConvergenceView
				view, waitErr = Wait(ctx, f, w, changes)
				if fl.Table() {
					PrintWait(f.IOStreams.Out, view)
				} else {
					waited.Convergence = view
				}
			}
			if then != nil && failure == nil && waitErr == nil {
				thenErr = then()
			}
			return nil
		}
	}
	if err := levercmd.End(ctx, f, env, fl, ev, doc, text, end); err != nil {
		return err
	}
	return cmp.Or(failure, waitErr, thenErr)
}

// PrintWait writes the outcome of a wait for the table form.
func PrintWait(w io.Writer, v *ConvergenceView) {
	for _, d := range v.Dependencies {
		if d.Confirmed {
			how := fmt.Sprintf("%s on %d of %d instances", d.Goal, d.InstancesConfirmed, d.Instances)
			if !d.PerInstance {
				how = fmt.Sprintf("%s by the fleet's worst and best (~%d samples)", d.Goal, d.Instances)
			}
			fmt.Fprintf(w, "Confirmed %s: %s after %s\n", d.Dependency, how, human.Duration(time.Duration(*d.TimeToConvergeSeconds*float64(time.Second))))
			continue
		}
		cv := metrics.Convergence{Change: metrics.Change{Dependency: d.Dependency, Goal: d.Goal}, Verdict: d.Verdict, PerInstance: d.PerInstance,
			Instances: d.Instances, Confirmed: d.InstancesConfirmed, Stragglers: d.Stragglers, Unknown: d.Unknown, Note: d.Note}
		fmt.Fprintf(w, "Not confirmed %s: %s\n", d.Dependency, textsafe.Line(cv.Summary()))
	}
}

// progressLine rewrites one stderr line while the wait runs.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	shown bool
}

func (p *progressLine) show(wp metrics.WaitProgress) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for _, cv := range wp.Convergences {
		if cv.Verdict == metrics.Confirmed {
			parts = append(parts, cv.Dependency+" confirmed")
			continue
		}
		parts = append(parts, cv.Dependency+" "+cv.Summary())
	}
	line := "waiting for the fleet: " + strings.Join(parts, "; ")
	if wp.Err != nil {
		line += " (gauges: " + textsafe.OneLine(wp.Err.Error()) + ")"
	}
	line += fmt.Sprintf(" · %s elapsed, gauges catch up within %s, timeout %s", human.Duration(wp.Elapsed.Truncate(100*time.Millisecond)),
		human.Duration(wp.Bound), human.Duration(wp.Timeout))
	// Every value is rendered here (instance ids come from the source);
	// the line's own CR and erase are the only controls written.
	fmt.Fprint(textsafe.Raw(p.w), "\r\033[K"+textsafe.Line(line))
	p.shown = true
}

func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(textsafe.Raw(p.w), "\r\033[K")
	}
}
