// Package baking is the breaker commands' --bake: its flags, the bake made
// ready before the change (its sources opened and checked, so one that
// cannot work is refused with nothing written), the bake of the overrides a
// change cleared (internal/bake's rule) and its view and lines. `breaker
// clear` and `apply` share it.
package baking

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/bake"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the flags of --bake: watch the fleet after the clear, and
// put the override back when it does not hold.
type Options struct {
	Bake        time.Duration
	Alarms      []string
	ReopenShare float64
}

// AddFlags registers --bake, --alarm and --reopen-share.
func AddFlags(cmd *cobra.Command, o *Options) {
	fl := cmd.Flags()
	fl.Var(human.DurationFlag{D: &o.Bake}, "bake",
		"after the clear, watch the fleet this long; put the override back if the breaker re-opens on most instances or an --alarm goes bad (exit 15)")
	fl.StringArrayVar(&o.Alarms, "alarm", nil, "with --bake, a CloudWatch alarm of the context that must stay OK (ALARM or INSUFFICIENT_DATA puts the override back; repeatable)")
	fl.Float64Var(&o.ReopenShare, "reopen-share", metrics.DefaultReopenShare,
		"with --bake, the share of instances above which the breaker counts as re-opened (0.5: most; 0: any)")
}

// Check refuses bake flags that cannot work, before anything is read.
func (o *Options) Check(cmd *cobra.Command, dryRun bool) error {
	if !cmd.Flags().Changed("bake") {
		for _, name := range []string{"alarm", "reopen-share"} {
			if cmd.Flags().Changed(name) {
				return cmdutil.Usagef("--%s only applies with --bake: add --bake DURATION, or drop --%s", name, name)
			}
		}
		return nil
	}
	switch {
	case dryRun:
		return cmdutil.Usagef("--bake has nothing to watch with --dry-run: drop one of them")
	case o.Bake <= 0:
		return cmdutil.Usagef("--bake %s is not positive: give how long to watch the fleet, like 10m", human.Duration(o.Bake))
	case o.ReopenShare < 0 || o.ReopenShare >= 1 || o.ReopenShare != o.ReopenShare:
		return cmdutil.Usagef("--reopen-share %v is not a share from 0 up to (not including) 1: 0.5 puts back when most instances re-open, 0 when any does", o.ReopenShare)
	}
	return nil
}

// Baker is a bake made ready before the clear: its sources opened and
// checked, so one that cannot work is refused with nothing written.
type Baker struct {
	opts  Options
	watch *bake.Watch
	src   string
}

// New refuses, before anything is written, a bake longer than the
// context's max-override (what it would put back could not last it), a
// gauge source that cannot be read, and alarms without CloudWatch or that
// do not exist.
func New(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, o Options, metricsURL string, maxOverride time.Duration) (*Baker, error) {
	if o.Bake > maxOverride {
		return nil, cmdutil.Usagef("--bake %s is longer than this context's max-override of %s: no override it could put back lasts that long; bake for at most %s",
			human.Duration(o.Bake), human.Duration(maxOverride), human.Duration(maxOverride))
	}
	if len(o.Alarms) > 0 && env.Context.IsLocal() && env.Context.Metrics.CloudWatch == nil {
		return nil, cmdutil.Usagef("--alarm needs CloudWatch, and this context has none configured (metrics.cloudwatch): drop --alarm, or use a context that reads CloudWatch")
	}
	src, err := gaugeenv.Source(ctx, env, metricsURL)
	if err != nil {
		return nil, fmt.Errorf("--bake needs a metrics source: %w; nothing was cleared", err)
	}
	// One read now: a bake that could never judge the fleet is refused
	// before the clear, not discovered after it.
	if _, err := src.Fetch(ctx, metrics.FetchRequest{Window: metrics.WaitWindow}); err != nil {
		msg := fmt.Sprintf("--bake needs a metrics source it can read, and %s cannot be read", src.Describe())
		if hint := src.Hint(); hint != "" {
			msg += " (" + hint + ")"
		}
		return nil, exitcode.Default(exitcode.Unavailable, fmt.Errorf("%s; nothing was cleared: %w", msg, err))
	}
	w := &bake.Watch{Gauges: src, Clock: f.Clock, Share: o.ReopenShare, Live: src.Kind != metrics.SourceCloudWatch}
	if len(o.Alarms) > 0 {
		alarms := metrics.NewAlarmSource(gaugeenv.Config(env, ""))
		if err := bake.CheckAlarms(ctx, alarms, o.Alarms); err != nil {
			return nil, fmt.Errorf("--alarm: %w; nothing was cleared", err)
		}
		w.Alarms, w.AlarmNames = alarms, o.Alarms
	}
	return &Baker{opts: o, watch: w, src: src.Describe()}, nil
}

// View is the JSON of a bake (docs/contracts/cli-output.md).
type View struct {
	// Verdict is held, reopened, alarm, lost or interrupted.
	Verdict        bake.Verdict        `json:"verdict"`
	Why            string              `json:"why"`
	Source         string              `json:"source"`
	PeriodSeconds  float64             `json:"period_seconds"`
	ElapsedSeconds float64             `json:"elapsed_seconds"`
	Polls          int                 `json:"polls"`
	ReopenShare    float64             `json:"reopen_share"`
	Alarms         []string            `json:"alarms"`
	BadAlarms      []metrics.Alarm     `json:"bad_alarms"`
	Dependencies   []metrics.Reopening `json:"dependencies"`
	// PutBack is what became of each override the bake put back (or could
	// not): empty when the fleet held.
	PutBack []PutBackView `json:"put_back"`
}

// PutBackView is one override's put-back.
type PutBackView struct {
	Dependency string `json:"dependency"`
	// Action is put-back, left-alone (written since the clear), expired or
	// failed.
	Action string `json:"action"`
	// AuditID is the put-back's record; RollbackOf the clear's.
	AuditID           string `json:"audit_id,omitempty"`
	RollbackOf        string `json:"rollback_of"`
	ConfirmedByReread bool   `json:"confirmed_by_reread,omitempty"`
	Error             string `json:"error,omitempty"`
}

// Run bakes the overrides cleared (the written clears of outs) since the
// clear at since: it watches, puts back what tripped and announces it,
// fills view and writes the table form's lines to out.
func (b *Baker) Run(ctx context.Context, env *cmdenv.Env, outs []lever.Outcome, since time.Time, view *View, out io.Writer, table bool) error {
	var cleared []bake.Cleared
	var deps []string
	for _, o := range outs {
		if r := breaker.ClearResultOf(o); o.Written && r.Before != nil {
			cleared = append(cleared, bake.Cleared{Dependency: o.Target, Record: o.Record, Before: *r.Before})
			deps = append(deps, o.Target)
		}
	}
	*view = View{Source: b.src, PeriodSeconds: b.opts.Bake.Seconds(), ReopenShare: b.opts.ReopenShare, Alarms: append([]string{}, b.opts.Alarms...),
		BadAlarms: []metrics.Alarm{}, Dependencies: []metrics.Reopening{}, PutBack: []PutBackView{}}
	if len(cleared) == 0 {
		view.Verdict, view.Why = bake.Held, "nothing was cleared: nothing to bake"
		if table {
			fmt.Fprintln(out, "Nothing was cleared: nothing to bake.")
		}
		return nil
	}
	res := b.watch.Run(ctx, deps, since, b.opts.Bake)
	puts := bake.Rollback(context.WithoutCancel(ctx), env.Guard(), "", res, cleared)
	view.Verdict, view.Why, view.Polls = res.Verdict, res.Why, res.Polls
	view.ElapsedSeconds = res.Elapsed.Seconds()
	view.Dependencies = append(view.Dependencies, res.Dependencies...)
	view.BadAlarms = append(view.BadAlarms, res.BadAlarms...)
	for _, p := range puts {
		view.PutBack = append(view.PutBack, putBackView(p, cleared))
		// Loud: announced on every sink, whatever the clear's --no-notify.
		cmdenv.Announce(context.WithoutCancel(ctx), env, p.Event)
	}
	if table {
		printBake(out, *view)
	}
	return bake.Err(res, puts)
}

func putBackView(p bake.PutBack, cleared []bake.Cleared) PutBackView {
	v := PutBackView{Dependency: p.Dependency, AuditID: p.Record.ID, ConfirmedByReread: p.Confirmed}
	for _, c := range cleared {
		if c.Dependency == p.Dependency {
			v.RollbackOf = c.Record.ID
		}
	}
	switch r := p.Result; {
	case p.Err != nil:
		v.Action, v.Error = "failed", textsafe.OneLine(p.Err.Error())
	case r.Restored != nil:
		v.Action = "put-back"
	case r.LeftAlone != nil:
		v.Action = "left-alone"
	case r.Expired:
		v.Action = "expired"
	}
	return v
}

// printBake writes the bake's outcome for the table form.
func printBake(w io.Writer, v View) {
	switch v.Verdict {
	case bake.Held:
		fmt.Fprintf(w, "Baked %s: the fleet held (%s, %d reads); the clear stands.\n", human.Duration(secs(v.PeriodSeconds)), textsafe.Line(v.Source), v.Polls)
		return
	case bake.Interrupted:
		fmt.Fprintf(w, "Bake interrupted after %s: the clear stands, nothing was put back.\n", human.Duration(secs(v.ElapsedSeconds).Truncate(time.Second)))
		return
	case bake.Lost:
		fmt.Fprintf(w, "Bake lost after %s: %s. The clear stands, nothing was put back.\n", human.Duration(secs(v.ElapsedSeconds).Truncate(time.Second)), textsafe.Line(v.Why))
		return
	case bake.Reopened, bake.AlarmBad:
	}
	fmt.Fprintf(w, "BAKE FAILED after %s: %s\n", human.Duration(secs(v.ElapsedSeconds).Truncate(time.Second)), textsafe.Line(v.Why))
	for _, p := range v.PutBack {
		switch p.Action {
		case "put-back":
			fmt.Fprintf(w, "ROLLED BACK %s: its override is forced open again (record %s, rollback of %s)\n", p.Dependency, p.AuditID, p.RollbackOf)
		case "left-alone":
			fmt.Fprintf(w, "Not put back %s: someone wrote its override since the clear; left as it is\n", p.Dependency)
		case "expired":
			fmt.Fprintf(w, "Not put back %s: the override's expiry has passed\n", p.Dependency)
		default:
			fmt.Fprintf(w, "Not put back %s: %s\n", p.Dependency, textsafe.Line(p.Error))
		}
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
