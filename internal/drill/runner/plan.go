package runner

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Plan is what a drill would do, computed without acting: `drill plan`
// prints it (-o json for CI review; docs/contracts/drill-file.md).
type Plan struct {
	Kind    string          `json:"kind"`
	Version int             `json:"version"`
	Drill   drill.DrillInfo `json:"drill"`
	// Context and Store are what the run would act on.
	Context string `json:"context"`
	Store   string `json:"store"`
	Gauges  string `json:"gauges,omitempty"`
	Actor   string `json:"actor,omitempty"`
	// TimeoutSeconds bounds the run; every lever expires by its start plus
	// this.
	TimeoutSeconds  float64 `json:"timeout_seconds"`
	PollSeconds     float64 `json:"poll_interval_seconds"`
	RollbackSeconds float64 `json:"rollback_timeout_seconds"`
	MetricsURL      string  `json:"metrics_url,omitempty"`
	// GuardGracePolls and GuardGraceSeconds: a guard unevaluable for that
	// many polls and that long is lost (the run stops and rolls back).
	GuardGracePolls   int     `json:"guard_grace_polls"`
	GuardGraceSeconds float64 `json:"guard_grace_seconds"`

	Vars           []PlanVar   `json:"vars"`
	Hypothesis     []PlanCheck `json:"hypothesis"`
	StopConditions []PlanCheck `json:"stop_conditions"`
	// Alarms are the DescribeAlarms requests each poll would send, one per
	// region, covering every alarm condition of the drill.
	Alarms    []PlanAlarms `json:"alarms,omitempty"`
	Steps     []PlanStep   `json:"steps"`
	Rollbacks []string     `json:"rollbacks"`
	// Problems are what would make the run invalid (a variable that cannot
	// be resolved, alarms one request cannot cover).
	Problems []string `json:"problems,omitempty"`
}

// PlanVar is a resolved variable; a secret one reads "[secret]".
type PlanVar struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Secret bool   `json:"secret,omitempty"`
}

// PlanCheck is a condition the run would watch.
type PlanCheck struct {
	Name          string  `json:"name"`
	Kind          string  `json:"kind"`
	Description   string  `json:"description"`
	WithinSeconds float64 `json:"within_seconds,omitempty"`
	// OnError is what an evaluation error does during the run: stop (past
	// the guard grace, the steps stop and roll back) or continue.
	OnError string `json:"on_error"`
}

// PlanAlarms is one region's DescribeAlarms request.
type PlanAlarms struct {
	Region string   `json:"region"`
	Names  []string `json:"names,omitempty"`
	Prefix string   `json:"prefix,omitempty"`
}

// PlanStep is one step.
type PlanStep struct {
	Index          int     `json:"index"`
	ID             string  `json:"id"`
	Name           string  `json:"name"`
	Kind           string  `json:"kind"`
	Description    string  `json:"description"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// Lever is what a mutating step moves, with its inverse and expiry.
	Lever *runtime.PlanLever `json:"lever,omitempty"`
	// Impact is what a force-open step does to the tools while its
	// override holds (the degradation matrix alone: a plan reads no rates),
	// over the lever's bound; absent for other steps, and while the
	// dependency comes from a step's output.
	Impact *impact.Report `json:"impact,omitempty"`
	// Rollbacks are the step's own rollback steps.
	Rollbacks []string `json:"rollbacks,omitempty"`
}

// NewPlan resolves d's variables with svc's environment and describes
// every step, lever and condition. It reads nothing from the store and
// writes nothing anywhere; alarm regions are resolved through svc.Alarms
// (the AWS configuration, no CloudWatch request).
func NewPlan(ctx context.Context, d *drill.Drill, svc *runtime.Deps) *Plan {
	rc := runtime.NewRunContext(d, "PLAN", svc, nil)
	p := &Plan{Kind: "DrillPlan", Version: drill.Version, Drill: drill.DrillInfo{Name: d.Name, File: d.File, Description: d.Description},
		Context: svc.ContextName, Store: svc.StoreDescription, Actor: svc.Actor, TimeoutSeconds: drill.Seconds(d.Timeout),
		PollSeconds: drill.Seconds(d.PollInterval), RollbackSeconds: drill.Seconds(d.RollbackTimeout),
		GuardGracePolls: d.GuardGrace.Polls, GuardGraceSeconds: drill.Seconds(d.GuardGrace.For),
		Vars: []PlanVar{}, Hypothesis: []PlanCheck{}, StopConditions: []PlanCheck{}, Steps: []PlanStep{}, Rollbacks: []string{}}
	if svc.Gauges != nil {
		p.Gauges = svc.Gauges.Describe()
	}
	for _, v := range d.Vars {
		val, err := rc.Expand(v.Value)
		if err != nil {
			p.Problems = append(p.Problems, fmt.Sprintf("variable %s: %v", v.Name, err))
			val = v.Value.String()
		}
		rc.SetVar(v.Name, val, v.Secret)
		pv := PlanVar{Name: v.Name, Value: val, Secret: v.Secret}
		if v.Secret {
			pv.Value = "[secret]"
		}
		p.Vars = append(p.Vars, pv)
	}
	if !d.MetricsURL.IsZero() {
		u, err := d.MetricsURL.ExpandURL(rc)
		if err != nil {
			p.Problems = append(p.Problems, fmt.Sprintf("metrics_url: %v", err))
			u = d.MetricsURL.String()
		}
		p.MetricsURL, p.Gauges = u, "prometheus "+u
	}
	checks := func(cs []*drill.Check) []PlanCheck {
		out := []PlanCheck{}
		for _, c := range cs {
			out = append(out, PlanCheck{Name: c.Name, Kind: c.Kind.Name(), Description: rc.Redact(runtime.ConditionOf(c).Describe(rc)),
				WithinSeconds: drill.Seconds(c.Within), OnError: c.OnError})
		}
		return out
	}
	p.Hypothesis, p.StopConditions = checks(d.Hypothesis), checks(d.StopConditions)
	p.planAlarms(ctx, rc)
	movedBy := map[string]string{} // lever subject → the step that registered its rollback
	walk(rc, d, func(s *drill.Step, owner string, l *runtime.PlanLever) {
		switch owner {
		case "":
			p.Steps = append(p.Steps, PlanStep{Index: len(p.Steps) + 1, ID: s.ID, Name: s.Name, Kind: s.Kind.Name(),
				Description: rc.Redact(runtime.ActionOf(s).Describe(rc)), TimeoutSeconds: drill.Seconds(stepTimeout(d, s)), Lever: l,
				Impact: leverImpact(l)})
			if l == nil {
				return
			}
			if first, moved := movedBy[l.Subject]; moved {
				// As at run time: one rollback per lever, restoring its state
				// before the drill.
				l.Inverse = "none new: the rollback registered by step " + first + " restores it to its state before the drill"
			} else {
				movedBy[l.Subject] = s.ID
			}
		case drillOwner:
			p.Rollbacks = append(p.Rollbacks, rc.Redact((&explicitRollback{step: s}).Describe()))
		default:
			ps := &p.Steps[len(p.Steps)-1]
			ps.Rollbacks = append(ps.Rollbacks, rc.Redact((&explicitRollback{step: s}).Describe()))
		}
	})
	return p
}

// leverImpact is the impact of a lever that forces a dependency open,
// over the longest it can hold; nil for any other lever and while the
// dependency is not known before the run.
func leverImpact(l *runtime.PlanLever) *impact.Report {
	if l == nil || l.Action != breaker.ActionForceOpen || l.Target == "" {
		return nil
	}
	r := impact.Static(impact.Request{Dependencies: []string{l.Target},
		For: time.Duration(l.ExpiresWithinSeconds * float64(time.Second))})
	return &r
}

// drillOwner is the owner walk gives the drill's own rollbacks: no step id
// can be it (a step may be named drill).
const drillOwner = "#drill"

// walk visits what a run of d reaches, in the order the plan lists it:
// each step (owner ""), then its rollback steps (owner: the step's id),
// and last the drill's rollbacks (owner [drillOwner]); each as the current
// step of rc, with the lever it would move (nil: none). The plan and the
// table's policy's view of a run ([DrillRun]) are both this walk.
func walk(rc *runtime.RunContext, d *drill.Drill, visit func(s *drill.Step, owner string, l *runtime.PlanLever)) {
	defer rc.SetCurrentStep(rc.CurrentStep())
	one := func(s *drill.Step, owner string) {
		rc.SetCurrentStep(s.ID)
		var l *runtime.PlanLever
		if m, ok := s.Spec.(runtime.Mutating); ok {
			l = m.Plan(rc)
		}
		visit(s, owner, l)
	}
	for _, s := range d.Steps {
		one(s, "")
		for _, rb := range s.Rollback {
			one(rb, s.ID)
		}
	}
	for _, rb := range d.Rollbacks {
		one(rb, drillOwner)
	}
}

func (p *Plan) planAlarms(ctx context.Context, rc *runtime.RunContext) {
	if len(rc.Drill.Alarms()) == 0 {
		return
	}
	if rc.Deps.Alarms == nil {
		p.Problems = append(p.Problems, "alarm conditions need a CloudWatch alarm source")
		return
	}
	qs, err := rc.AlarmQueries(ctx)
	if err != nil {
		p.Problems = append(p.Problems, "alarms: "+err.Error())
		return
	}
	for _, r := range slices.Sorted(maps.Keys(qs)) {
		in, err := metrics.AlarmRequest(qs[r])
		if err != nil {
			p.Problems = append(p.Problems, fmt.Sprintf("alarms in %s: %v", r, err))
			continue
		}
		pa := PlanAlarms{Region: r, Names: in.AlarmNames}
		if in.AlarmNamePrefix != nil {
			pa.Prefix = *in.AlarmNamePrefix
		}
		p.Alarms = append(p.Alarms, pa)
	}
}

// WritePlan prints p for a terminal or a CI log. Text from the file, the
// environment or --var is shown by the one rule for untrusted text
// (textsafe.Line: controls and bidi characters as visible escapes).
func WritePlan(w io.Writer, p *Plan) {
	pf := func(format string, args ...any) {
		for i, a := range args {
			if s, ok := a.(string); ok {
				args[i] = textsafe.Line(s)
			}
		}
		fmt.Fprintf(w, format, args...)
	}
	pf("drill %s (%s): would act on context %q (%s)\n", p.Drill.Name, p.Drill.File, p.Context, p.Store)
	if p.Gauges != "" {
		pf("breaker gauges from %s\n", p.Gauges)
	}
	pf("timeout %s: every lever lapses by the start plus that; poll every %s; each rollback within %s\n",
		dur(p.TimeoutSeconds), dur(p.PollSeconds), dur(p.RollbackSeconds))
	if len(p.Hypothesis)+len(p.StopConditions) > 0 {
		pf("preflight: every stop condition and hypothesis check is evaluated once before anything is done; one that cannot be refuses the run\n")
		pf("guard grace: a guard unevaluable for %d polls and %s stops the steps and rolls back (guard lost), unless it says on_error: continue\n",
			p.GuardGracePolls, dur(p.GuardGraceSeconds))
	}
	if len(p.Vars) > 0 {
		pf("vars:\n")
		for _, v := range p.Vars {
			pf("  %s = %s\n", v.Name, v.Value)
		}
	}
	checks := func(title string, cs []PlanCheck) {
		if len(cs) == 0 {
			return
		}
		pf("%s:\n", title)
		for _, c := range cs {
			within := ""
			if c.WithinSeconds > 0 {
				within = " (within " + dur(c.WithinSeconds) + ")"
			}
			onError := ""
			if c.OnError == drill.OnErrorContinue {
				onError = " [on_error: continue: goes on blind when it cannot be evaluated]"
			}
			pf("  - %s [%s]: %s%s%s\n", c.Name, c.Kind, c.Description, within, onError)
		}
	}
	checks("hypothesis (before the steps and after the rollbacks)", p.Hypothesis)
	checks("stop conditions (watched every "+dur(p.PollSeconds)+" while the steps run)", p.StopConditions)
	for _, a := range p.Alarms {
		if a.Prefix != "" {
			pf("alarms: one DescribeAlarms request per poll in %s, AlarmNamePrefix %q\n", a.Region, a.Prefix)
		} else {
			pf("alarms: one DescribeAlarms request per poll in %s, AlarmNames %s\n", a.Region, strings.Join(a.Names, ", "))
		}
	}
	pf("steps:\n")
	for _, s := range p.Steps {
		pf("  %d. %s (%s): %s [timeout %s]\n", s.Index, s.ID, s.Kind, s.Description, dur(s.TimeoutSeconds))
		if l := s.Lever; l != nil {
			pf("       moves %s; rollback: %s\n", l.Subject, l.Inverse)
			if l.ExpiresWithinSeconds > 0 {
				pf("       lapses on its own within %s: %s\n", dur(l.ExpiresWithinSeconds), l.Expiry)
			} else {
				pf("       %s\n", l.Expiry)
			}
			switch {
			case s.Impact != nil:
				pf("       impact while it holds (degradation matrix):\n")
				for _, line := range s.Impact.Lines() {
					pf("         %s\n", line)
				}
			case l.Action == breaker.ActionForceOpen:
				pf("       impact: known once the run names the dependency (it comes from a step's output)\n")
			}
		}
		for _, rb := range s.Rollbacks {
			pf("       rollback step: %s\n", rb)
		}
	}
	for _, rb := range p.Rollbacks {
		pf("drill rollback (last): %s\n", rb)
	}
	for _, pr := range p.Problems {
		pf("problem: %s\n", pr)
	}
	pf("nothing was run or written: this is a plan\n")
}

func dur(secs float64) string {
	return time.Duration(secs * float64(time.Second)).Round(time.Millisecond).String()
}
