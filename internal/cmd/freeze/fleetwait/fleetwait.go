// Package fleetwait is the freeze commands' --wait: its flags, and waiting
// until every instance's chaos_frozen gauge reports the freeze (or its
// lift), the rule being metrics.JudgeFreeze, as force-open's --wait is
// metrics.Judge.
package fleetwait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the flags of --wait.
type Options struct {
	Wait       bool
	Timeout    time.Duration
	MetricsURL string
}

// AddFlags registers --wait, --timeout and --metrics-url; goal says what
// the gauges confirm ("the freeze").
func AddFlags(cmd *cobra.Command, o *Options, goal string) {
	fl := cmd.Flags()
	fl.BoolVar(&o.Wait, "wait", false, fmt.Sprintf("after the write, wait until every instance's %s gauge reports %s (exit 11 naming those that do not, within --timeout)",
		freeze.PrometheusMetricName, goal))
	fl.Var(human.DurationFlag{D: &o.Timeout}, "timeout", "how long --wait waits (default: the scrape's bound plus the fleet's cache period and a margin, 16s)")
	fl.StringVar(&o.MetricsURL, "metrics-url", "", "with --wait, scrape this Prometheus endpoint instead of the context's metrics source")
}

// Check refuses flag combinations that cannot work, before anything is
// read or written.
func (o *Options) Check(cmd *cobra.Command, dryRun bool) error {
	return levercmd.CheckWait(cmd, o.Wait, dryRun, o.Timeout, "give a duration like 30s", "timeout", "metrics-url")
}

// Reader opens the context's gauge source before the write (nil without
// --wait): it must be a Prometheus scrape, which names every instance.
func (o *Options) Reader(ctx context.Context, env *cmdenv.Env) (metrics.FreezeReader, error) {
	if !o.Wait {
		return nil, nil
	}
	src, err := gaugeenv.Source(ctx, env, o.MetricsURL)
	if err != nil {
		return nil, fmt.Errorf("--wait: %w", err)
	}
	r, ok := src.GaugeSource.(metrics.FreezeReader)
	if !ok {
		return nil, cmdutil.Usagef("--wait reads %s from a Prometheus scrape, and context %q's gauge source is %s: pass --metrics-url URL; nothing was written",
			freeze.PrometheusMetricName, env.Name, src.Describe())
	}
	return r, nil
}

// View is the JSON of a wait.
type View struct {
	Confirmed      bool                   `json:"confirmed"`
	Standing       metrics.FreezeStanding `json:"standing"`
	Polls          int                    `json:"polls"`
	ElapsedSeconds float64                `json:"elapsed_seconds"`
	TimeoutSeconds float64                `json:"timeout_seconds"`
	Error          *string                `json:"error"`
}

// Confirm waits on r for every instance to report want (frozen, or not), and
// returns the view and the error to exit with: nil confirmed; 11 naming
// the instances that do not obey; 5 when the gauges could never be read.
func (o *Options) Confirm(ctx context.Context, f *cmdenv.Factory, r metrics.FreezeReader, want bool) (*View, error) {
	w, err := metrics.WaitFreeze(ctx, f.Clock, r, want, o.Timeout, 0)
	v := &View{Confirmed: err == nil, Standing: w.Standing, Polls: w.Polls, ElapsedSeconds: w.Elapsed.Seconds(), TimeoutSeconds: w.Timeout.Seconds()}
	if err == nil {
		return v, nil
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	v.Error = &msg
	switch {
	case ctx.Err() != nil:
		return v, exitcode.Errorf(exitcode.Interrupted, "interrupted while waiting for the fleet to confirm: the change was written and audited; see koshactl freeze status")
	case w.FetchErr != nil && len(w.Standing.Instances) == 0:
		return v, exitcode.Default(exitcode.Unavailable, fmt.Errorf("the change was written, but the gauges could not be read to confirm it: %w", w.FetchErr))
	case errors.Is(err, metrics.ErrNotConfirmed):
	}
	return v, exitcode.Errorf(exitcode.Unconfirmed, "the change was written, but the fleet did not confirm it within %s: %s",
		human.Duration(w.Timeout), w.Standing.Summary())
}

// Print writes a wait's outcome for the table form.
func Print(w io.Writer, v *View) {
	if v.Confirmed {
		fmt.Fprintf(w, "Confirmed: %s after %s\n", textsafe.Line(v.Standing.Summary()),
			human.Duration(time.Duration(v.ElapsedSeconds*float64(time.Second)).Truncate(100*time.Millisecond)))
		return
	}
	fmt.Fprintf(w, "Not confirmed: %s\n", textsafe.Line(v.Standing.Summary()))
}

// Finish is a freeze command's end once its change is made
// ([levercmd.End]); with r set (--wait), the wait for every instance to
// report want, its view in waited (-o json|yaml) or its line (the table).
func (o *Options) Finish(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, fl levercmd.Flags, r metrics.FreezeReader, want bool,
	ev *notify.Event, doc any, waited **View, text string) error {
	var wait func() error
	if r != nil {
		wait = func() error {
			v, err := o.Confirm(ctx, f, r, want)
			if fl.Table() {
				Print(f.IOStreams.Out, v)
			} else {
				*waited = v
			}
			return err
		}
	}
	return levercmd.End(ctx, f, env, fl, ev, doc, text, wait)
}
