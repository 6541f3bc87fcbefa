package drill

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/lazyre"
)

// Limits and defaults of a drill file (docs/contracts/drill-file.md).
const (
	// Version is the drill file format version this package reads.
	Version = 1
	// MaxTimeout bounds a drill's timeout.
	MaxTimeout = 24 * time.Hour
	// DefaultStepTimeout is a step's timeout when neither the step nor the
	// drill sets one (bounded by the drill's timeout).
	DefaultStepTimeout = time.Minute
	// DefaultRollbackTimeout bounds each rollback unless the drill sets
	// rollback_timeout.
	DefaultRollbackTimeout = 30 * time.Second
	// MaxRollbackTimeout bounds rollback_timeout.
	MaxRollbackTimeout = 10 * time.Minute
	// DefaultPollInterval is how often wait-for, checks with within, and
	// stop conditions poll unless the drill sets poll_interval.
	DefaultPollInterval = time.Second
	// MinPollInterval bounds poll intervals from below.
	MinPollInterval = 10 * time.Millisecond
	// DefaultCheckTimeout bounds one evaluation of a check.
	DefaultCheckTimeout = 10 * time.Second
	// MaxFileSize bounds a drill file.
	MaxFileSize = 1 << 20
)

var drillNameRE = lazyre.New(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Drill is a parsed, valid drill file.
type Drill struct {
	// File is the name the drill was parsed under.
	File string
	// SHA256 is the hex SHA-256 of the file's bytes as parsed: what a
	// drill.run change request approves (internal/approval).
	SHA256      string
	Name        string
	Description string
	// Context is the koshactl context the drill is written for; empty
	// means whatever context is selected.
	Context string
	// AllowProtected lets the drill run on a protected context (the
	// command line must allow it too).
	AllowProtected bool
	// Timeout bounds the whole run before rollback; every lever the drill
	// pulls expires by then.
	Timeout time.Duration
	// StepTimeout is the default timeout of a step.
	StepTimeout time.Duration
	// RollbackTimeout bounds each rollback.
	RollbackTimeout time.Duration
	// PollInterval is the default polling interval.
	PollInterval time.Duration
	// GuardGrace is how long a guard (a stop condition, a hypothesis
	// check, a wait-for step) may stay unevaluable during the run before
	// it is lost (guard_grace; default [DefaultGuardGrace]).
	GuardGrace GuardGrace
	// MetricsURL, when set, is the Prometheus endpoint breaker gauges are
	// read from, instead of the context's metrics source.
	MetricsURL Template
	Vars       []Var
	// Hypothesis is the steady state, checked before the steps and again
	// after the rollbacks.
	Hypothesis []*Check
	// StopConditions abort the run when any of them holds.
	StopConditions []*Check
	Steps          []*Step
	// Rollbacks are explicit extra rollbacks, registered when the run
	// starts, so they run after every step's rollback.
	Rollbacks []*Step

	// alarms are every alarm condition of the drill (runtime's
	// AlarmCondition), read together.
	alarms []Spec
}

// Var is one entry of the drill's vars.
type Var struct {
	Name  string
	Value Template
	// Secret keeps the value out of every report.
	Secret bool
}

// Step is one step of a drill (or an explicit rollback).
type Step struct {
	ID   string
	Name string
	Kind StepKind
	// Spec is the decoded kind value (a runtime.Action).
	Spec Spec
	// Timeout is the step's own timeout; zero means the default.
	Timeout time.Duration
	// ContinueOnFailure lets the drill go on after this step fails (the
	// drill still fails).
	ContinueOnFailure bool
	// Rollback lists explicit rollbacks registered before the step runs.
	Rollback []*Step
	// Line and Col locate the step in the file.
	Line, Col int
}

// Check is one hypothesis check or stop condition.
type Check struct {
	Name string
	Kind ConditionKind
	// Spec is the decoded condition (a runtime.Condition).
	Spec Spec
	// Within, when set, polls the condition until it holds or Within has
	// passed; zero checks once.
	Within time.Duration
	// Interval is the polling interval for Within (zero: the drill's).
	Interval time.Duration
	// Timeout bounds one evaluation (zero: DefaultCheckTimeout).
	Timeout time.Duration
	// OnError is what an evaluation error does during the run:
	// OnErrorStop (the default) or OnErrorContinue.
	OnError   string
	Line, Col int
}

// Top-level, step and check fields.
var (
	drillFields = []string{"version", "name", "description", "context", "allow_protected", "timeout", "step_timeout",
		"rollback_timeout", "poll_interval", "guard_grace", "metrics_url", "vars", "hypothesis", "stop_conditions", "steps", "rollback"}
	stepFields  = []string{"id", "name", "timeout", "continue_on_failure", "rollback"}
	checkFields = []string{"name", "within", "interval", "timeout", "on_error"}
)

// ParseFile reads and parses the drill file at path.
func ParseFile(reg *Registry, path string) (*Drill, []Problem) {
	// A named pipe or device is refused before it is read: it could block
	// the command forever.
	f, _, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, []Problem{unreadable(path, err)}
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, []Problem{unreadable(path, err)}
	}
	return Parse(reg, path, src)
}

// unreadable is the problem of a drill file that could not be read: it
// has no position (Line 0), and says the file's cause alone ("no such file
// or directory"), the path being the problem's File.
func unreadable(path string, err error) Problem {
	return Problem{File: path, Message: fmt.Sprintf("cannot read the drill file: %v", fsutil.Cause(err))}
}

var yamlLineRE = lazyre.New(`^yaml: (?:line (\d+): )?(.*)$`)

// Parse parses a drill file's bytes; file names it in problems. It returns
// the drill when there are no problems, and every problem found otherwise
// (sorted by position). Nothing is resolved or contacted: references to
// the environment and to step outputs are checked for shape and order only.
func Parse(reg *Registry, file string, src []byte) (*Drill, []Problem) {
	if len(src) > MaxFileSize {
		return nil, []Problem{{File: file, Line: 1, Col: 1, Message: fmt.Sprintf("drill file is larger than %d bytes", MaxFileSize)}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, []Problem{{File: file, Line: 1, Col: 1, Message: "drill file is empty: a drill needs at least name, timeout and steps"}}
		}
		return nil, []Problem{yamlProblem(file, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		line := max(extra.Line, 1)
		return nil, []Problem{{File: file, Line: line, Col: 1, Message: "a drill file holds one YAML document; this is a second one (remove the --- separator or split the file)"}}
	} else if !errors.Is(err, io.EOF) {
		return nil, []Problem{yamlProblem(file, err)}
	}
	d := &Decoder{file: file, reg: reg, budget: nodeBudget, allSteps: map[string]string{}}
	dr := d.drill(&doc)
	slices.SortStableFunc(d.problems, func(a, b Problem) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col)) })
	if len(d.problems) > 0 {
		return nil, d.problems
	}
	sum := sha256.Sum256(src)
	dr.SHA256 = hex.EncodeToString(sum[:])
	return dr, nil
}

// yamlParserProblems are the messages of go.yaml.in/yaml/v3's parser (as
// opposed to its scanner). The parser's errors print a 0-based line; the
// scanner's a 1-based one.
//
// Matching the text is the only way to tell them apart: yaml.v3 returns a
// syntax error as a plain fmt error ("yaml: line N: MSG"), with no type,
// line field or error kind to test (yaml.TypeError only reports values
// that do not fit a Go type, after a successful parse, and a failed parse
// yields no node with a position). yamlerr_test.go pins the numbering of
// one parser and one scanner message, so an upgrade that changes it fails
// there.
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>": true, "did not find expected <document start>": true,
	"found undefined tag handle": true, "did not find expected node content": true,
	"did not find expected '-' indicator": true, "did not find expected key": true,
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"found duplicate %YAML directive": true, "found incompatible YAML document": true, "found duplicate %TAG directive": true,
}

func yamlProblem(file string, err error) Problem {
	msg := strings.TrimSpace(err.Error())
	line := 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
			if yamlParserProblems[m[2]] {
				line++
			}
		}
		msg = m[2]
	}
	switch msg {
	case "did not find expected ',' or '}'", "did not find expected ',' or ']'":
		msg += " (in the { } or [ ] that starts here: close it, and quote any value holding ${...} or a colon)"
	}
	return Problem{File: file, Line: max(line, 1), Col: 1, Message: "YAML syntax: " + msg}
}

func (d *Decoder) drill(doc *yaml.Node) *Drill {
	root := doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			d.Errorf(doc, "drill file is empty")
			return nil
		}
		root = doc.Content[0]
	}
	m := d.Map(root, "drill")
	if m == nil {
		return nil
	}
	m.rejectUnknownExcept(func(k string) bool { return strings.HasPrefix(k, "x-") }, drillFields...)
	dr := &Drill{File: d.file, StepTimeout: DefaultStepTimeout, RollbackTimeout: DefaultRollbackTimeout, PollInterval: DefaultPollInterval,
		GuardGrace: DefaultGuardGrace()}
	if n := m.Get("version"); n != nil {
		if v, ok := d.Int(n, "version"); ok && v != Version {
			d.Errorf(n, "version: this koshactl reads drill files of version %d, not %d", Version, v)
		}
	}
	if name, ok := m.String("name", true); ok {
		if !drillNameRE.MatchString(name) {
			m.Errorf("name", "%q: use 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", name)
		}
		dr.Name = name
	}
	dr.Description, _ = m.String("description", false)
	dr.Context, _ = m.String("context", false)
	dr.AllowProtected, _ = m.Bool("allow_protected")
	if t, ok := m.DurationAtMost("timeout", true, MaxTimeout, "the %s a drill may last"); ok {
		dr.Timeout = t
	}
	if t, ok := m.DurationAtMost("step_timeout", false, dr.Timeout, "the drill's timeout %s"); ok {
		dr.StepTimeout = t
	} else if dr.Timeout > 0 && dr.Timeout < dr.StepTimeout {
		dr.StepTimeout = dr.Timeout
	}
	if t, ok := m.DurationAtMost("rollback_timeout", false, MaxRollbackTimeout, "the %s each rollback may take"); ok {
		dr.RollbackTimeout = t
	}
	if t, ok := m.Duration("poll_interval", false); ok {
		if t < MinPollInterval {
			m.Errorf("poll_interval", "%s is shorter than the %s minimum", t, MinPollInterval)
		} else if dr.Timeout > 0 && t >= dr.Timeout {
			m.Errorf("poll_interval", "%s is not shorter than the drill's timeout %s", t, dr.Timeout)
		}
		dr.PollInterval = t
	}
	// Each section's decoder takes an absent (nil) node as empty.
	dr.GuardGrace = d.guardGrace(m.Get("guard_grace"), dr.Timeout)
	d.drillTimeout = dr.Timeout
	d.pollInterval = dr.PollInterval

	// Variables first: everything else may use them.
	d.scope = scope{where: "vars", vars: map[string]bool{}}
	dr.Vars = d.vars(m.Get("vars"))
	d.scope.where = "metrics_url"
	dr.MetricsURL, _ = d.URL(m.Get("metrics_url"), "metrics_url")
	d.collectStepIDs(m.Get("steps"))

	d.scope.where, d.scope.stepsAllowed = "the hypothesis", false
	dr.Hypothesis = d.checks(m.Get("hypothesis"), "hypothesis")
	d.scope.where = "a stop condition"
	dr.StopConditions = d.checks(m.Get("stop_conditions"), "stop_conditions")
	dr.Steps = d.steps(m.Require("steps"))
	d.scope = scope{where: "a drill-level rollback", vars: d.scope.vars}
	dr.Rollbacks = d.rollbacks(m.Get("rollback"), "rollback")
	dr.alarms = d.alarms
	return dr
}

// AddAlarm records an alarm condition of the drill being decoded: the run
// reads every alarm of the drill together, once per region and poll round.
func (d *Decoder) AddAlarm(c Spec) { d.alarms = append(d.alarms, c) }

// Alarms returns the drill's alarm conditions, as their kind decoded them.
func (d *Drill) Alarms() []Spec { return d.alarms }

func (d *Decoder) vars(n *yaml.Node) []Var {
	m := d.Map(n, "vars")
	if m == nil {
		return nil
	}
	var out []Var
	for _, name := range m.keys {
		kn := m.KeyNode(name)
		if !varNameRE.MatchString(name) {
			d.Errorf(kn, "vars: %q is not a variable name: use letters, digits, '_' and '-', starting with a letter or '_'", name)
			continue
		}
		v := Var{Name: name}
		val := m.Get(name)
		if val == nil {
			continue
		}
		ok := false
		if val.Kind == yaml.MappingNode {
			sub := d.Fields(val, "vars: "+name, "value", "secret")
			if sub == nil {
				continue
			}
			v.Value, ok = sub.Template("value", true)
			v.Secret, _ = sub.Bool("secret")
		} else {
			v.Value, ok = d.Template(val, "vars: "+name)
		}
		d.scope.vars[name] = true
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// collectStepIDs notes every step id, so references to later steps get a
// precise message.
func (d *Decoder) collectStepIDs(n *yaml.Node) {
	if n == nil || n.Kind != yaml.SequenceNode {
		return
	}
	for i, item := range n.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		id := fmt.Sprintf("step-%d", i+1)
		for j := 0; j+1 < len(item.Content); j += 2 {
			if item.Content[j].Value == "id" && item.Content[j+1].Kind == yaml.ScalarNode {
				id = item.Content[j+1].Value
			}
		}
		d.allSteps[id] = ""
	}
}

func (d *Decoder) list(n *yaml.Node, what string) []*yaml.Node {
	n = d.Resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, "%s must be a list (items start with -), not %s", what, kindName(n))
		return nil
	}
	return n.Content
}

func (d *Decoder) checks(n *yaml.Node, what string) []*Check {
	var out []*Check
	for i, item := range d.list(n, what) {
		if c := d.check(item, fmt.Sprintf("%s[%d]", what, i)); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// check decodes a hypothesis check or stop condition: common fields plus
// exactly one condition kind key.
func (d *Decoder) check(n *yaml.Node, what string) *Check {
	m := d.Map(n, what)
	if m == nil {
		return nil
	}
	c := &Check{Line: m.node.Line, Col: m.node.Column}
	c.Name, _ = m.String("name", false)
	if c.Name != "" {
		what = fmt.Sprintf("check %q", c.Name)
		m.what = what
	}
	if t, ok := m.DurationAtMost("within", false, d.drillTimeout, "the drill's timeout %s"); ok {
		c.Within = t
	}
	if t, ok := m.Duration("interval", false); ok {
		switch {
		case t < MinPollInterval:
			m.Errorf("interval", "%s is shorter than the %s minimum", t, MinPollInterval)
		case !m.Has("within"):
			m.Errorf("interval", "an interval only applies with within (how long to keep polling)")
		case c.Within > 0 && t >= c.Within:
			m.Errorf("interval", "%s is not shorter than within %s", t, c.Within)
		}
		c.Interval = t
	}
	c.Timeout, _ = m.Duration("timeout", false)
	c.OnError = d.OnError(m)
	if c.Kind, c.Spec = d.condition(m, what, checkFields); c.Spec == nil {
		return nil
	}
	c.Name = cmp.Or(c.Name, c.Kind.Name())
	return c
}

// guardGrace decodes guard_grace: {polls: N, for: DURATION}; a field left
// out keeps its default.
func (d *Decoder) guardGrace(n *yaml.Node, timeout time.Duration) GuardGrace {
	g := DefaultGuardGrace()
	m := d.Fields(n, "guard_grace", "polls", "for")
	if m == nil {
		return g
	}
	if !m.Has("polls") && !m.Has("for") {
		d.Errorf(m.Node(), "guard_grace: give polls (failed evaluations in a row, default %d) and/or for (how long, default %s)",
			DefaultGuardGracePolls, DefaultGuardGraceFor)
	}
	if v, ok := m.Int("polls", false); ok {
		if v < 1 || v > MaxGuardGracePolls {
			m.Errorf("polls", "%d: use 1-%d failed evaluations in a row", v, MaxGuardGracePolls)
		}
		g.Polls = v
	}
	if t, ok := m.Duration("for", false); ok {
		if timeout > 0 && t >= timeout {
			m.Errorf("for", "%s is not shorter than the drill's timeout %s: the guard would never be lost", t, timeout)
		}
		g.For = t
	}
	return g
}

// OnError decodes m's on_error field (stop or continue; default stop), for
// checks and the kinds that poll a guard (wait-for).
func (d *Decoder) OnError(m *Map) string {
	s, present := m.String("on_error", false)
	switch {
	case !present:
		return OnErrorStop
	case s == OnErrorStop, s == OnErrorContinue:
		return s
	}
	m.Errorf("on_error", "%q: use stop (an evaluation error past guard_grace stops the steps and rolls back; the default) or continue (go on blind)", s)
	return OnErrorStop
}

// NestedCondition decodes the one condition m holds (assert, wait-for):
// its key names a condition kind, every other key must be one of fields.
// It returns nil, with a problem, unless exactly one condition is there
// and it decodes.
func (d *Decoder) NestedCondition(m *Map, what string, fields ...string) Spec {
	_, spec := d.condition(m, what, fields)
	return spec
}

// condition decodes the one condition of m beside fields: its kind and its
// spec (nil, with a problem, unless it decodes).
func (d *Decoder) condition(m *Map, what string, fields []string) (ConditionKind, Spec) {
	key := d.oneKind(m, what, fields, names(d.reg.Conditions), "condition")
	if key == "" {
		return nil, nil
	}
	k, _ := d.reg.Condition(key)
	return k, k.Decode(d, m.Get(key))
}

// oneKind finds the single key of m that names a kind; other keys must be
// common fields. It reports a missing kind, unknown keys and extra kinds,
// and returns "" unless exactly one kind is present.
func (d *Decoder) oneKind(m *Map, what string, fields, kinds []string, noun string) string {
	var found []string
	for _, k := range m.keys {
		switch {
		case slices.Contains(fields, k):
		case slices.Contains(kinds, k):
			found = append(found, k)
		default:
			d.Errorf(m.KeyNode(k), "%s: unknown %s kind or field %q; %s kinds are %s; fields are %s%s",
				what, noun, k, noun, strings.Join(kinds, ", "), strings.Join(fields, ", "), DidYouMean(k, append(append([]string{}, kinds...), fields...)))
			return ""
		}
	}
	switch len(found) {
	case 0:
		d.Errorf(m.node, "%s: no %s kind: add one of %s", what, noun, strings.Join(kinds, ", "))
		return ""
	case 1:
		return found[0]
	}
	d.Errorf(m.KeyNode(found[1]), "%s: has two %s kinds, %q and %q: split it in two", what, noun, found[0], found[1])
	return ""
}

func (d *Decoder) steps(n *yaml.Node) []*Step {
	items := d.list(n, "steps")
	if items == nil {
		return nil
	}
	if len(items) == 0 {
		d.Errorf(n, "steps: a drill needs at least one step")
		return nil
	}
	d.scope.where, d.scope.stepsAllowed = "a step", true
	d.scope.earlier = map[string]StepKind{}
	var out []*Step
	seen := map[string]int{}
	for i, item := range items {
		s := d.step(item, i, seen, true)
		if s == nil {
			continue
		}
		out = append(out, s)
		d.scope.earlier[s.ID] = s.Kind
		d.scope.order = append(d.scope.order, s.ID)
	}
	return out
}

// step decodes one step; top says it is a drill step (with an id and
// rollbacks) rather than a rollback entry.
func (d *Decoder) step(n *yaml.Node, index int, seen map[string]int, top bool) *Step {
	list, idPrefix, fields := "steps", "step", stepFields
	if !top {
		list, idPrefix, fields = "rollback", "rollback", []string{"name", "timeout"}
	}
	what := fmt.Sprintf("%s[%d]", list, index)
	m := d.Map(n, what)
	if m == nil {
		return nil
	}
	s := &Step{Line: m.node.Line, Col: m.node.Column, ID: fmt.Sprintf("%s-%d", idPrefix, index+1)}
	if top {
		if id, ok := m.String("id", false); ok {
			switch {
			case !stepIDRE.MatchString(id):
				m.Errorf("id", "%q is not a step id: use lowercase letters, digits, '-' and '_', starting with a letter or digit", id)
			case seen[id] > 0:
				m.Errorf("id", "%q is already the id of the step at line %d", id, seen[id])
			default:
				s.ID = id
				seen[id] = m.node.Line
			}
		} else {
			seen[s.ID] = m.node.Line
		}
		what = fmt.Sprintf("step %q", s.ID)
		m.what = what
	}
	s.Name, _ = m.String("name", false)
	if t, ok := m.DurationAtMost("timeout", false, d.drillTimeout, "the drill's timeout %s"); ok {
		s.Timeout = t
	}
	if top {
		s.ContinueOnFailure, _ = m.Bool("continue_on_failure")
	}
	kindKey := d.oneKind(m, what, fields, names(d.reg.Steps), "step")
	if kindKey != "" {
		s.Kind, _ = d.reg.Step(kindKey)
		s.Name = cmp.Or(s.Name, s.ID)
		prev := d.scope.current
		if top {
			d.scope.current = s.ID
		}
		d.stepTimeout = s.Timeout
		s.Spec = s.Kind.Decode(d, m.Get(kindKey))
		d.stepTimeout = 0
		d.scope.current = prev
	}
	if top && m.Has("rollback") {
		saved := d.scope
		d.scope.where = fmt.Sprintf("the rollback of step %q", s.ID)
		d.scope.current = s.ID
		s.Rollback = d.rollbacks(m.Get("rollback"), fmt.Sprintf("step %q: rollback", s.ID))
		d.scope = saved
	}
	if s.Spec == nil {
		return nil
	}
	return s
}

// rollbacks decodes a rollback entry or a list of them.
func (d *Decoder) rollbacks(n *yaml.Node, what string) []*Step {
	n = d.Resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode && n.Kind != yaml.MappingNode {
		d.Errorf(n, "%s must be a step (a mapping) or a list of steps, not %s", what, kindName(n))
		return nil
	}
	var out []*Step
	for i, item := range Items(n) {
		if s := d.step(item, i, nil, false); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// DrillTimeout returns the drill's timeout (zero if it is invalid), for
// kinds that check their durations fit.
func (d *Decoder) DrillTimeout() time.Duration { return d.drillTimeout }

// StepTimeout returns the explicit timeout of the step being decoded, or
// zero.
func (d *Decoder) StepTimeout() time.Duration { return d.stepTimeout }

// PollInterval returns the drill's default poll interval.
func (d *Decoder) PollInterval() time.Duration { return d.pollInterval }
