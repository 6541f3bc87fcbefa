package drill

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/suggest"
)

// nodeBudget bounds how many nodes one parse visits, so alias cycles and
// "billion laughs" documents end in a problem instead of a hang.
const nodeBudget = 200_000

// Decoder turns YAML nodes into drill values and collects every problem
// with its position. Step and condition kinds receive one in Decode.
//
// Its policy differs from the config file's and the sandbox config's (both
// read aliases and merge keys as yaml.v3 does), on purpose: an alias of a
// whole value is followed, but a merge key (<<) is refused. A drill is a
// reviewed plan of changes to production: every field a step acts on must
// be written where the step is, so a reviewer reads what runs and a problem
// is reported at the line that holds it, not at an anchor elsewhere that
// other steps share. See docs/project-layout.md, "Reading YAML".
type Decoder struct {
	file      string
	reg       *Registry
	problems  []Problem
	budget    int
	exhausted bool
	scope     scope
	// allSteps holds every step id of the file, so a reference to a later
	// step can say so.
	allSteps map[string]string
	// drillTimeout, stepTimeout and pollInterval let kinds check that
	// their durations fit (zero when unknown).
	drillTimeout, stepTimeout, pollInterval time.Duration
	// depth is the nesting of the value being converted (yamlValue).
	depth int
	// alarms collects the drill's alarm conditions.
	alarms []Spec
}

// scope says what templates decoded now may reference.
type scope struct {
	// where names the section for messages ("the hypothesis").
	where string
	// stepsAllowed is false where no step output can exist yet.
	stepsAllowed bool
	// earlier holds the steps before the current one: id -> kind.
	earlier map[string]StepKind
	order   []string
	// current is the id of the step being decoded.
	current string
	vars    map[string]bool
}

// Errorf records a problem at n's position (the file start when n is nil).
func (d *Decoder) Errorf(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, max(n.Column, 1)
	}
	d.errorAt(line, col, fmt.Sprintf(format, args...))
}

func (d *Decoder) errorAt(line, col int, msg string) {
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Col: col, Message: msg})
}

// Resolve follows an alias and charges the node budget. It returns nil
// once the budget is spent (one problem is recorded).
func (d *Decoder) Resolve(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode; depth++ {
		if depth > 16 {
			d.Errorf(n, "alias chain too long")
			return nil
		}
		n = n.Alias
	}
	if n == nil {
		return nil
	}
	d.budget--
	if d.budget < 0 {
		if !d.exhausted {
			d.exhausted = true
			d.Errorf(n, "document too large or aliased too often (more than %d nodes after expanding aliases)", nodeBudget)
		}
		return nil
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		default:
			return "a string"
		}
	default:
		return "a document"
	}
}

// Map is a YAML mapping being decoded: fields are looked up by key, and
// RejectUnknown reports keys nobody asked for.
type Map struct {
	d    *Decoder
	node *yaml.Node
	what string
	keys []string
	kn   map[string]*yaml.Node
	vals map[string]*yaml.Node
}

// Decoder returns the decoder m belongs to.
func (m *Map) Decoder() *Decoder { return m.d }

// Map decodes n as a mapping; what names it in messages ("http", "step
// \"sign\""). It returns nil (with a problem) when n is not a mapping.
func (d *Decoder) Map(n *yaml.Node, what string) *Map {
	n = d.Resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, "%s must be a mapping, not %s", what, kindName(n))
		return nil
	}
	m := &Map{d: d, node: n, what: what, kn: map[string]*yaml.Node{}, vals: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.Resolve(n.Content[i]), n.Content[i+1]
		if k == nil {
			return nil
		}
		if k.Kind != yaml.ScalarNode {
			d.Errorf(k, "%s: keys must be plain strings, not %s", what, kindName(k))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			d.Errorf(k, "%s: YAML merge keys (<<) are not supported: repeat the fields, or use an alias for a whole value", what)
			continue
		}
		if first, dup := m.kn[k.Value]; dup {
			d.Errorf(k, "%s: key %q is repeated (first at line %d)", what, k.Value, first.Line)
			continue
		}
		m.keys = append(m.keys, k.Value)
		m.kn[k.Value] = k
		m.vals[k.Value] = v
	}
	return m
}

// Fields decodes n as a mapping of fields: [Decoder.Map], with a problem
// for every other key ([Map.RejectUnknown]).
func (d *Decoder) Fields(n *yaml.Node, what string, fields ...string) *Map {
	m := d.Map(n, what)
	if m != nil {
		m.RejectUnknown(fields...)
	}
	return m
}

// Node returns the mapping node itself.
func (m *Map) Node() *yaml.Node { return m.node }

// What returns the name the map is reported under.
func (m *Map) What() string { return m.what }

// Keys returns the keys in document order.
func (m *Map) Keys() []string { return m.keys }

// Has reports whether key is present.
func (m *Map) Has(key string) bool { _, ok := m.vals[key]; return ok }

// Get returns key's value node (aliases resolved), or nil when absent.
func (m *Map) Get(key string) *yaml.Node {
	v, ok := m.vals[key]
	if !ok {
		return nil
	}
	return m.d.Resolve(v)
}

// KeyNode returns the node of key itself, for positions.
func (m *Map) KeyNode(key string) *yaml.Node { return m.kn[key] }

// RejectUnknown records an error for every key that is not one of fields,
// naming the known fields (and the closest one, when the key looks like a
// typo of it).
func (m *Map) RejectUnknown(fields ...string) { m.rejectUnknownExcept(nil, fields...) }

// rejectUnknownExcept is RejectUnknown, also accepting keys for which skip returns true.
func (m *Map) rejectUnknownExcept(skip func(string) bool, fields ...string) {
	for _, k := range m.keys {
		if !slices.Contains(fields, k) && (skip == nil || !skip(k)) {
			m.d.Errorf(m.kn[k], "%s: unknown field %q; known fields are %s%s", m.what, k, strings.Join(fields, ", "), DidYouMean(k, fields))
		}
	}
}

// Errorf records a problem about key (at its value, or at the mapping when
// the key is absent), prefixed with the map's name and the key.
func (m *Map) Errorf(key string, format string, args ...any) {
	n := m.vals[key]
	if n == nil {
		n = m.node
	}
	m.d.Errorf(n, "%s: %s: %s", m.what, key, fmt.Sprintf(format, args...))
}

// Require reports key as missing when it is absent and returns its node.
func (m *Map) Require(key string) *yaml.Node {
	if !m.Has(key) {
		m.d.Errorf(m.node, "%s: %s is required", m.what, key)
		return nil
	}
	return m.Get(key)
}

func (m *Map) fetch(key string, required bool) *yaml.Node {
	if required {
		return m.Require(key)
	}
	return m.Get(key)
}

// field decodes key with dec, named "MAP: KEY" in its problems; ok is
// false when key is absent (a problem when required) or invalid.
func field[T any](m *Map, key string, required bool, dec func(*yaml.Node, string) (T, bool)) (T, bool) {
	n := m.fetch(key, required)
	if n == nil {
		var zero T
		return zero, false
	}
	return dec(n, m.what+": "+key)
}

// String decodes key as a plain string (no templating).
func (m *Map) String(key string, required bool) (string, bool) {
	return field(m, key, required, m.d.stringValue)
}

// Template decodes key as a template string.
func (m *Map) Template(key string, required bool) (Template, bool) {
	return field(m, key, required, m.d.Template)
}

// Duration decodes key as a Go duration ("30s", "2m"). ok is false when
// absent or invalid.
func (m *Map) Duration(key string, required bool) (time.Duration, bool) {
	return field(m, key, required, m.d.Duration)
}

// DurationAtMost decodes key as [Map.Duration] does, recording a problem
// when the duration is longer than limit (zero: no limit); bound words the
// limit, a format of it ("the drill's timeout %s").
func (m *Map) DurationAtMost(key string, required bool, limit time.Duration, bound string) (time.Duration, bool) {
	t, ok := m.Duration(key, required)
	if ok && limit > 0 && t > limit {
		m.Errorf(key, "%s is longer than %s", t, fmt.Sprintf(bound, limit))
	}
	return t, ok
}

// Bool decodes key as a boolean.
func (m *Map) Bool(key string) (bool, bool) {
	n := m.Get(key)
	if n == nil || !m.d.scalar(n, m.what+": "+key, "true or false", "!!bool") {
		return false, false
	}
	return n.Value == "true" || n.Value == "True" || n.Value == "TRUE", true
}

// Int decodes key as an integer.
func (m *Map) Int(key string, required bool) (int, bool) { return field(m, key, required, m.d.Int) }

// Float decodes key as a number.
func (m *Map) Float(key string, required bool) (float64, bool) {
	return field(m, key, required, m.d.Float)
}

// NamedTemplate is one entry of a mapping of names to template strings.
type NamedTemplate struct {
	Name  string
	Value Template
}

// TemplateMap decodes key as a mapping of names to template strings
// (headers, environment variables), in document order.
func (m *Map) TemplateMap(key string) []NamedTemplate { return m.templateMap(key, nil) }

// templateMap is TemplateMap keeping the entries keep (nil: every one)
// accepts; keep reports what it refuses, at the entry's key (kn).
func (m *Map) templateMap(key string, keep func(kn *yaml.Node, t NamedTemplate) bool) []NamedTemplate {
	n := m.Get(key)
	if n == nil {
		return nil
	}
	sub := m.d.Map(n, m.what+": "+key)
	if sub == nil {
		return nil
	}
	out := make([]NamedTemplate, 0, len(sub.keys))
	for _, k := range sub.keys {
		t, ok := m.d.Template(sub.Get(k), sub.what+": "+k)
		if nt := (NamedTemplate{Name: k, Value: t}); ok && (keep == nil || keep(sub.KeyNode(k), nt)) {
			out = append(out, nt)
		}
	}
	return out
}

// Items returns the items of n, a list, or n alone: for a field that
// takes one value or a list of them.
func Items(n *yaml.Node) []*yaml.Node {
	if n.Kind == yaml.SequenceNode {
		return n.Content
	}
	return []*yaml.Node{n}
}

// DescribeNode names n's kind for a message, with its text when it is a
// scalar: `a string "x"`, `a list`.
func DescribeNode(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%s %q", kindName(n), n.Value)
	}
	return kindName(n)
}

// scalar reports whether n, resolved, is a scalar that can be want: of
// one of tags, or of any tag but null when none is given; when it is not,
// a problem says what n is instead.
func (d *Decoder) scalar(n *yaml.Node, what, want string, tags ...string) bool {
	if n.Kind == yaml.ScalarNode && (slices.Contains(tags, n.ShortTag()) || len(tags) == 0 && n.ShortTag() != "!!null") {
		return true
	}
	desc := kindName(n)
	if len(tags) > 0 {
		desc = DescribeNode(n)
	}
	d.Errorf(n, "%s must be %s, not %s", what, want, desc)
	return false
}

func (d *Decoder) stringValue(n *yaml.Node, what string) (string, bool) {
	if !d.scalar(n, what, "a string") {
		return "", false
	}
	return n.Value, true
}

// String decodes n as a plain string.
func (d *Decoder) String(n *yaml.Node, what string) (string, bool) {
	n = d.Resolve(n)
	if n == nil {
		return "", false
	}
	return d.stringValue(n, what)
}

// Duration decodes n as a positive Go duration.
func (d *Decoder) Duration(n *yaml.Node, what string) (time.Duration, bool) {
	if n = d.Resolve(n); n == nil || !d.scalar(n, what, "a duration like 30s or 2m") {
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		hint := "write it with a unit, like 30s, 1m30s or 500ms"
		if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil {
			hint = "a bare number has no unit: " + hint
		}
		d.Errorf(n, "%s: %q is not a duration: %s", what, n.Value, hint)
		return 0, false
	}
	if v <= 0 {
		d.Errorf(n, "%s: %s must be positive", what, n.Value)
		return 0, false
	}
	return v, true
}

// Int decodes n as an integer.
func (d *Decoder) Int(n *yaml.Node, what string) (int, bool) {
	if n = d.Resolve(n); n == nil || !d.scalar(n, what, "a whole number", "!!int") {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 32)
	if err != nil {
		d.Errorf(n, "%s: %s is out of range", what, n.Value)
		return 0, false
	}
	return int(v), true
}

// Float decodes n as a finite number.
func (d *Decoder) Float(n *yaml.Node, what string) (float64, bool) {
	if n = d.Resolve(n); n == nil || !d.scalar(n, what, "a number", "!!int", "!!float") {
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.Errorf(n, "%s: %s is not a finite number", what, n.Value)
		return 0, false
	}
	return v, true
}

// Template decodes n as a template string and checks its references
// against what is in scope. Numbers and booleans are accepted as their
// text.
func (d *Decoder) Template(n *yaml.Node, what string) (Template, bool) {
	return d.templateFor(n, what, nil)
}

// templateFor is Template for a sink: refuse, when set, says why a
// reference that is in scope may not be used there (see sink.go).
func (d *Decoder) templateFor(n *yaml.Node, what string, refuse refusal) (Template, bool) {
	if n = d.Resolve(n); n == nil || !d.scalar(n, what, "a string") {
		return Template{}, false
	}
	t, errs := parseTemplate(n.Value)
	t.line = n.Line
	ok := true
	for _, e := range errs {
		d.errorAt(n.Line, scalarColumn(n, e.off), what+": "+e.msg)
		ok = false
	}
	for i, r := range t.Refs() {
		msg := d.checkRef(r)
		if msg == "" && refuse != nil {
			msg = refuse(t, i, r)
		}
		if msg != "" {
			d.errorAt(n.Line, scalarColumn(n, r.Offset), fmt.Sprintf("%s: %s: %s", what, r.Text, msg))
			ok = false
		}
	}
	return t, ok
}

// scalarColumn returns the column of byte offset off inside scalar n, when
// it can be computed exactly (single-line plain or simply quoted scalars),
// and the scalar's own column otherwise.
func scalarColumn(n *yaml.Node, off int) int {
	switch {
	case strings.ContainsAny(n.Value[:off], "\n\\'"):
	case n.Style == 0:
		return n.Column + off
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		return n.Column + 1 + off
	}
	return n.Column
}

// checkRef returns why r cannot be resolved where it is, or "".
func (d *Decoder) checkRef(r Ref) string {
	s := &d.scope
	switch r.Namespace {
	case NSVars:
		if !s.vars[r.Name] {
			names := slices.Sorted(maps.Keys(s.vars))
			if len(names) == 0 {
				return fmt.Sprintf("no variable %q is defined before this point (declare it under vars)", r.Name)
			}
			return fmt.Sprintf("no variable %q is defined before this point (defined: %s)%s", r.Name, strings.Join(names, ", "), DidYouMean(r.Name, names))
		}
	case NSSteps:
		if !s.stepsAllowed {
			return fmt.Sprintf("%s cannot use step outputs: it runs when steps may not have run", s.where)
		}
		if r.Name == s.current {
			return "a step cannot use its own outputs (its rollback is registered before it runs)"
		}
		kind, ok := s.earlier[r.Name]
		if !ok {
			if _, later := d.allSteps[r.Name]; later {
				return fmt.Sprintf("step %q runs after this point; only earlier steps' outputs exist here", r.Name)
			}
			if len(s.order) == 0 {
				return fmt.Sprintf("no step %q runs before this point", r.Name)
			}
			return fmt.Sprintf("no step %q runs before this point (earlier steps: %s)%s", r.Name, strings.Join(s.order, ", "), DidYouMean(r.Name, s.order))
		}
		if !hasOutput(kind, r.Output) {
			outs := kind.Outputs()
			if len(outs) == 0 {
				return fmt.Sprintf("step %q (%s) has no outputs", r.Name, kind.Name())
			}
			return fmt.Sprintf("step %q (%s) has no output %q; it has %s%s", r.Name, kind.Name(), r.Output, strings.Join(outs, ", "), DidYouMean(r.Output, outs))
		}
	}
	return ""
}

// hasOutput reports whether kind declares output name; a declared name
// ending in ".*" covers every name with that prefix.
func hasOutput(kind StepKind, name string) bool {
	for _, o := range kind.Outputs() {
		if p, fam := strings.CutSuffix(o, "*"); fam {
			if strings.HasPrefix(name, p) && len(name) > len(p) {
				return true
			}
		} else if o == name {
			return true
		}
	}
	return false
}

// maxValueDepth bounds how deeply a JSON body or expected value nests.
const maxValueDepth = 64

// Value converts a YAML node into a comparable value: nil, bool,
// float64, a Template (strings, when templated), []any or map[string]any.
func (d *Decoder) Value(n *yaml.Node, what string, templated bool) (any, bool) {
	n = d.Resolve(n)
	if n == nil {
		return nil, false
	}
	if d.depth >= maxValueDepth {
		d.Errorf(n, "%s: nested more than %d levels deep (an alias that contains itself?)", what, maxValueDepth)
		d.exhausted = true
		d.budget = -1
		return nil, false
	}
	d.depth++
	defer func() { d.depth-- }()
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			_ = n.Decode(&b)
			return b, true
		case "!!int", "!!float":
			return d.Float(n, what)
		}
		if templated {
			return d.Template(n, what)
		}
		return n.Value, true
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		ok := true
		for i, c := range n.Content {
			v, vok := d.Value(c, fmt.Sprintf("%s[%d]", what, i), templated)
			out, ok = append(out, v), ok && vok
		}
		return out, ok
	case yaml.MappingNode:
		m := d.Map(n, what)
		if m == nil {
			return nil, false
		}
		out := make(map[string]any, len(m.Keys()))
		ok := true
		for _, k := range m.Keys() {
			v, vok := d.Value(m.Get(k), what+"."+k, templated)
			out[k], ok = v, ok && vok
		}
		return out, ok
	default:
		d.Errorf(n, "%s: unsupported YAML value", what)
		return nil, false
	}
}

// Problem is one thing wrong with a drill file, at a position in it.
type Problem struct {
	// File is the name the file was parsed under.
	File string `json:"file"`
	// Line and Col are 1-based.
	Line int `json:"line"`
	Col  int `json:"col"`
	// Message says what is wrong and, where it can, how to fix it.
	Message string `json:"message"`
}

// String formats the problem as FILE:LINE:COL: message, the form editors
// and CI log parsers recognize; a problem of the whole file (Line 0: it
// could not be read) as FILE: message.
func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Message)
}

// Unreadable reports whether the problem is that the file could not be
// read at all (it has no position).
func (p Problem) Unreadable() bool { return p.Line == 0 }

// DidYouMean returns ` (did you mean "x"?)` for the candidate nearest to
// s by edit distance, ignoring case, when it is near enough to be a likely
// typo; otherwise "".
func DidYouMean(s string, candidates []string) string {
	if c := suggest.Closest(s, candidates, max(3, 1+len(s)/3), strings.ToLower); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}
