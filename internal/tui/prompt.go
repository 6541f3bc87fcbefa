package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

type promptKind int

const (
	promptForce promptKind = iota
	promptClear
	promptApprove
	promptDeny
)

type promptStep int

const (
	stepReason promptStep = iota
	stepDuration
	stepConfirm
	// stepReview shows what is decided; enter confirms (no input).
	stepReview
)

// prompt is the force/clear sub-model: a few fields asked one after the
// other, validated on enter, and a typed confirmation on protected contexts.
type prompt struct {
	kind       promptKind
	dependency string
	// current is the active override a force would replace, or the item a
	// clear would delete.
	current *breaker.Override
	// request is the change request an approve or deny prompt decides.
	request *approval.Request
	steps   []promptStep
	step    int
	input   textinput.Model
	err     string

	reason   string
	duration time.Duration

	contextName string
	policy      breaker.DurationPolicy
	styles      styles.Styles
	// header lines, computed when the prompt opens.
	header []string
}

func newForcePrompt(dep string, current *breaker.Override, now time.Time, opts Options, st styles.Styles) *prompt {
	p := &prompt{kind: promptForce, dependency: dep, current: current, steps: []promptStep{stepReason, stepDuration},
		contextName: opts.ContextName, policy: breaker.DurationPolicy{Max: opts.MaxOverride}, styles: st}
	p.header = []string{fmt.Sprintf("Force %s open across the fleet · context %s", dep, opts.ContextName)}
	if current != nil {
		p.header = append(p.header, fmt.Sprintf("This REPLACES the active override by %s (%s): %s",
			current.Actor, expiryText(*current, now), current.Reason))
	}
	return p.ready(opts.Protected)
}

func newClearPrompt(dep string, current *breaker.Override, now time.Time, opts Options, st styles.Styles) *prompt {
	p := &prompt{kind: promptClear, dependency: dep, current: current, steps: []promptStep{stepReason},
		contextName: opts.ContextName, styles: st}
	what := "active"
	switch {
	case current.ActiveAt(now):
	case current.State != breaker.OverrideStateForcedOpen:
		what = "inactive"
	default:
		what = "expired"
	}
	p.header = []string{
		fmt.Sprintf("Clear the %s override of %s · context %s", what, dep, opts.ContextName),
		fmt.Sprintf("Set by %s %s (%s): %s", current.Actor, setAgo(*current, now), expiryText(*current, now), current.Reason),
	}
	if current.Malformed() {
		p.header = append(p.header, current.MalformedSummary(now))
	}
	return p.ready(opts.Protected)
}

// newRequestPrompt asks to approve (kind promptApprove) or deny
// (promptDeny, with an optional note) request r; on a protected context
// the context's name is typed, as for force and clear.
func newRequestPrompt(kind promptKind, r approval.Request, now time.Time, opts Options, st styles.Styles) *prompt {
	p := &prompt{kind: kind, request: &r, contextName: opts.ContextName, styles: st}
	verb := "Approve"
	if kind == promptDeny {
		verb = "Deny"
		p.steps = []promptStep{stepReason}
	}
	p.header = requestHeader(verb, r, now, opts.ContextName)
	if kind == promptApprove {
		p.header = append(p.header, "Your verified identity approves exactly this change (this hash).")
	}
	return p.ready(opts.Protected)
}

// ready ends the prompt's steps with the typed confirmation of a protected
// context (a prompt with nothing to type reviews what is decided) and
// opens its first field.
func (p *prompt) ready(protected bool) *prompt {
	if protected {
		p.steps = append(p.steps, stepConfirm)
	}
	if len(p.steps) == 0 {
		p.steps = []promptStep{stepReview}
	}
	p.input = p.newInput()
	return p
}

// setAgo says how long ago an override was set ("at an unknown time" when
// its created_at is malformed).
func setAgo(o breaker.Override, now time.Time) string {
	if o.CreatedAt.IsZero() {
		return "at an unknown time"
	}
	return human.Age(now.Sub(o.CreatedAt)) + " ago"
}

// expiryText says when an override lapses, relative to now.
func expiryText(o breaker.Override, now time.Time) string {
	switch {
	case o.HasProblem(breaker.AttrExpiresAt):
		return "expiry unreadable, held until cleared"
	case !o.Expires():
		return "never expires"
	case o.ActiveAt(now):
		return "expires in " + human.Age(o.ExpiresAt.Sub(now))
	}
	return "expired " + human.Age(now.Sub(o.ExpiresAt)) + " ago"
}

func (p *prompt) newInput() textinput.Model {
	var in textinput.Model
	switch p.steps[p.step] {
	case stepReason:
		switch p.kind {
		case promptForce:
			in = newInput("Reason:   ", "what is happening, e.g. provider incident INC-142", audit.MaxReasonLen, p.styles)
		case promptDeny:
			in = newInput("Reason (optional): ", "why it should not be applied", audit.MaxReasonLen, p.styles)
		default:
			in = newInput("Reason (optional): ", "why it is safe to clear", audit.MaxReasonLen, p.styles)
		}
	case stepDuration:
		in = newInput("Duration: ", "like 30m or 2h", 12, p.styles)
		in.SetValue(human.Duration(breaker.DefaultFor))
		in.CursorEnd()
	case stepConfirm:
		in = newInput(fmt.Sprintf("PROTECTED context: type %q to confirm: ", p.contextName), "", 64, p.styles)
	case stepReview:
		in = newInput("", "", 0, p.styles)
	}
	in.SetWidth(60)
	return in
}

// next validates the current field. It returns done when every field is
// filled, or an error message to show.
func (p *prompt) next() (done bool, errMsg string) {
	v := strings.TrimSpace(p.input.Value())
	switch p.steps[p.step] {
	case stepReason:
		if msg := reasonProblem(v, p.kind == promptForce); msg != "" {
			return false, msg
		}
		p.reason = v
	case stepDuration:
		d, err := human.ParseDuration(v) // the form the dashboard shows (2d) reads back
		if err != nil {
			return false, fmt.Sprintf("%q is not a duration: write it like 30m, 2h, 1h30m or 2d", v)
		}
		switch err := p.policy.CheckFor(d); {
		case errors.Is(err, breaker.ErrDurationNotPositive):
			return false, "the duration must be positive"
		case errors.Is(err, breaker.ErrDurationTooLong):
			return false, fmt.Sprintf("%s is over this context's max-override of %s", v, human.Duration(p.policy.MaxFor()))
		case err != nil:
			return false, err.Error()
		}
		p.duration = d
	case stepConfirm:
		if v != p.contextName {
			return false, fmt.Sprintf("that is not %q: type the context name exactly, or esc to cancel", p.contextName)
		}
	case stepReview:
		// Nothing typed: the review is confirmed by enter.
	}
	if p.step == len(p.steps)-1 {
		return true, ""
	}
	p.step++
	p.input = p.newInput()
	return false, ""
}

// reasonProblem applies the CLI's rule for a reason (a force-open's by
// [breaker.CheckForceReason], a clear's by [audit.ValidateReason]) and words
// what is wrong for the prompt; "" when the reason passes.
func reasonProblem(r string, force bool) string {
	check := audit.ValidateReason
	if force {
		check = breaker.CheckForceReason
	}
	switch err := check(r); {
	case errors.Is(err, breaker.ErrReasonRequired):
		return "a reason is required: everyone who looks at this override will read it"
	case err != nil:
		return "the " + err.Error()
	}
	return ""
}

// view renders the prompt's lines.
func (p *prompt) view(width int) string {
	st := p.styles
	lines := []string{st.Title.Render(safe(p.header[0]))}
	for _, h := range p.header[1:] {
		lines = append(lines, st.Warning.Render(safe(h)))
	}
	lines = append(lines, "")
	for i := 0; i < p.step; i++ {
		switch p.steps[i] {
		case stepReason:
			lines = append(lines, st.Label.Render("Reason:   ")+safe(p.reason))
		case stepDuration:
			lines = append(lines, st.Label.Render("Duration: ")+human.Duration(p.duration))
		case stepConfirm, stepReview:
			// Always the last step, so never among the answered ones.
		}
	}
	if p.steps[p.step] != stepReview {
		lines = append(lines, inputView(p.input))
	}
	if p.steps[p.step] == stepDuration {
		lines = append(lines, st.Dim.Render(fmt.Sprintf("at most %s; the override lapses by itself then", human.Duration(p.policy.MaxFor()))))
	}
	if p.err != "" {
		lines = append(lines, st.StatusError.Render("! "+p.err))
	}
	last := "enter: next"
	if p.step == len(p.steps)-1 {
		last = map[promptKind]string{promptForce: "enter: FORCE OPEN", promptClear: "enter: CLEAR", promptApprove: "enter: APPROVE", promptDeny: "enter: DENY"}[p.kind]
	}
	lines = append(lines, "", st.Dim.Render(last+" · esc: cancel (nothing is changed)"))
	box := st.Box.Width(min(max(width-2, 20), 100))
	return box.Render(strings.Join(lines, "\n"))
}
