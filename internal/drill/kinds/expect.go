package kinds

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lazyre"
)

// matchOps are the operators a matcher mapping may use.
var matchOps = []string{"equals", "not_equals", "exists", "gt", "gte", "lt", "lte", "in", "contains", "matches"}

// matcher is one expectation about a value: a YAML scalar means equals; a
// mapping combines operators, all of which must hold.
type matcher struct {
	ops []matchOp
}

type matchOp struct {
	op     string
	want   any     // nil, bool, float64, Template, []any (in: the values), map[string]any
	num    float64 // gt, gte, lt, lte
	re     *regexp.Regexp
	exists bool
}

// decodeMatcher reads an expectation.
func decodeMatcher(d *drill.Decoder, n *yaml.Node, what string) (matcher, bool) {
	n = d.Resolve(n)
	if n == nil {
		return matcher{}, false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		v, ok := d.Value(n, what, true)
		return matcher{ops: []matchOp{{op: "equals", want: v}}}, ok
	case yaml.SequenceNode:
		d.Errorf(n, "%s: a list is ambiguous here: write in: [...] for one of several values, or equals: [...] for this exact array", what)
		return matcher{}, false
	case yaml.MappingNode:
	default:
		d.Errorf(n, "%s must be a value or a mapping of operators (%s)", what, strings.Join(matchOps, ", "))
		return matcher{}, false
	}
	m := d.Fields(n, what, matchOps...)
	if m == nil {
		return matcher{}, false
	}
	var out matcher
	ok := len(m.Keys()) > 0
	if !ok {
		d.Errorf(n, "%s: an empty mapping expects nothing: use one of %s", what, strings.Join(matchOps, ", "))
	}
	for _, op := range m.Keys() {
		if !slices.Contains(matchOps, op) {
			ok = false
			continue
		}
		v := m.Get(op)
		if v == nil {
			return matcher{}, false
		}
		mo := matchOp{op: op}
		sub := what + ": " + op
		switch op {
		case "equals", "not_equals", "contains", "in":
			if op == "in" && (v.Kind != yaml.SequenceNode || len(v.Content) == 0) {
				d.Errorf(v, "%s must be a non-empty list of values", sub)
				ok = false
				break
			}
			val, vok := d.Value(v, sub, true)
			mo.want, ok = val, ok && vok
		case "exists":
			b, present := m.Bool(op)
			mo.exists, ok = b, ok && present
		case "gt", "gte", "lt", "lte":
			f, fok := d.Float(v, sub)
			mo.num, ok = f, ok && fok
		case "matches":
			s, sok := d.String(v, sub)
			re, err := regexp.Compile(s)
			if sok && err != nil {
				d.Errorf(v, "%s: %q is not a regular expression: %v", sub, s, err)
			}
			mo.re, ok = re, ok && sok && err == nil
		}
		out.ops = append(out.ops, mo)
	}
	return out, ok
}

// normalize turns json.Number into float64 throughout, for comparison.
func normalize(v any) any {
	v, _ = drill.MapValue(v, func(leaf any) (any, error) {
		if n, ok := leaf.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				return f, nil
			}
			return n.String(), nil
		}
		return leaf, nil
	})
	return v
}

func showWant(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return jsonText(v)
}

func showGot(v any, exists bool) string {
	if !exists {
		return "nothing (absent)"
	}
	cut := func(s string) string {
		if len(s) > 200 {
			return s[:200] + "..."
		}
		return s
	}
	if s, ok := v.(string); ok {
		return strconv.Quote(cut(s))
	}
	return cut(jsonText(v))
}

// coerce returns got as want's type when loose and got is a string that
// parses as one: loose values (HTTP headers) are strings that compare with
// numbers and booleans by parsing. Anything else is returned unchanged.
func coerce(got, want any, loose bool) any {
	s, ok := got.(string)
	if !loose || !ok {
		return got
	}
	switch want.(type) {
	case float64:
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f
		}
	case bool:
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return b
		}
	}
	return got
}

// match checks got (exists says whether it is present) and returns "" or
// what failed.
func (m matcher) match(rc *runtime.RunContext, got any, exists, loose bool) (string, error) {
	got = normalize(got)
	for _, op := range m.ops {
		want, err := drill.ExpandValue(rc, op.want)
		if err != nil {
			return "", err
		}
		g := coerce(got, want, loose)
		fail := ""
		switch op.op {
		case "exists":
			if exists != op.exists {
				if op.exists {
					fail = "want it present, got nothing"
				} else {
					fail = "want it absent, got " + showGot(got, true)
				}
			}
		case "equals":
			if !exists || !reflect.DeepEqual(g, want) {
				fail = fmt.Sprintf("want %s, got %s", showWant(want), showGot(g, exists))
			}
		case "not_equals":
			if exists && reflect.DeepEqual(g, want) {
				fail = fmt.Sprintf("want anything but %s", showWant(want))
			}
		case "gt", "gte", "lt", "lte":
			f, isNum := coerce(got, 0.0, loose).(float64)
			sym, holds := numOp(op.op, f, op.num)
			if !exists || !isNum {
				fail = fmt.Sprintf("want a number %s %s, got %s", sym, showWant(op.num), showGot(got, exists))
			} else if !holds {
				fail = fmt.Sprintf("want %s %s, got %s", sym, showWant(op.num), showWant(f))
			}
		case "in":
			if !slices.ContainsFunc(want.([]any), func(w any) bool { return exists && reflect.DeepEqual(coerce(got, w, loose), w) }) {
				fail = fmt.Sprintf("want one of %s, got %s", jsonText(want), showGot(got, exists))
			}
		case "contains": // a string's substring, or a list's element
			s, isStr := got.(string)
			w, wantStr := want.(string)
			list, _ := got.([]any)
			switch {
			case !exists:
				fail = fmt.Sprintf("want something containing %s, got nothing", showWant(want))
			case isStr && wantStr && strings.Contains(s, w), slices.ContainsFunc(list, func(e any) bool { return reflect.DeepEqual(e, want) }):
			default:
				fail = fmt.Sprintf("want something containing %s, got %s", showWant(want), showGot(got, true))
			}
		case "matches":
			s, isStr := got.(string)
			if !exists || !isStr {
				fail = fmt.Sprintf("want a string matching %q, got %s", op.re.String(), showGot(got, exists))
			} else if !op.re.MatchString(s) {
				fail = fmt.Sprintf("want a match for %q, got %s", op.re.String(), showGot(got, exists))
			}
		}
		if fail != "" {
			return fail, nil
		}
	}
	return "", nil
}

// numOp is the symbol of a comparison operator and whether a op b holds.
func numOp(op string, a, b float64) (string, bool) {
	switch op {
	case "gt":
		return ">", a > b
	case "gte":
		return ">=", a >= b
	case "lt":
		return "<", a < b
	}
	return "<=", a <= b
}

// statusSet is the accepted response statuses: codes and classes (2xx).
type statusSet struct {
	codes   []int
	classes []int
}

func (s statusSet) accepts(code int) bool {
	return slices.Contains(s.codes, code) || slices.Contains(s.classes, code/100)
}

func (s statusSet) String() string {
	var parts []string
	for _, c := range s.codes {
		parts = append(parts, strconv.Itoa(c))
	}
	for _, c := range s.classes {
		parts = append(parts, fmt.Sprintf("%dxx", c))
	}
	return strings.Join(parts, " or ")
}

var statusClassRE = lazyre.New(`^[1-5]xx$`)

func decodeStatus(d *drill.Decoder, n *yaml.Node, what string) (statusSet, bool) {
	n = d.Resolve(n)
	if n == nil {
		return statusSet{}, false
	}
	items := drill.Items(n)
	if len(items) == 0 {
		d.Errorf(n, "%s: an empty list accepts nothing", what)
		return statusSet{}, false
	}
	var s statusSet
	ok := true
	for _, it := range items {
		it = d.Resolve(it)
		if it == nil {
			return s, false
		}
		switch {
		case it.Kind == yaml.ScalarNode && it.ShortTag() == "!!int":
			c, err := strconv.Atoi(it.Value)
			if err != nil || c < 100 || c > 599 {
				d.Errorf(it, "%s: %s is not an HTTP status (100-599)", what, it.Value)
				ok = false
				continue
			}
			s.codes = append(s.codes, c)
		case it.Kind == yaml.ScalarNode && statusClassRE.MatchString(strings.ToLower(it.Value)):
			s.classes = append(s.classes, int(it.Value[0]-'0'))
		default:
			d.Errorf(it, "%s: %s is not an HTTP status: write a code like 200, a class like 2xx, or a list of them", what, drill.DescribeNode(it))
			ok = false
		}
	}
	return s, ok
}

// expectation is what an HTTP response must satisfy. Status defaults to
// 2xx.
type expectation struct {
	status       statusSet
	json         []keyed[JSONPath]
	headers      []keyed[string] // canonical names
	bodyContains []drill.Template
	maxLatency   time.Duration
}

// keyed is the matcher of a JSON path or a header.
type keyed[K any] struct {
	key K
	m   matcher
}

var expectFields = []string{"status", "json", "headers", "body_contains", "max_latency"}

func decodeExpect(d *drill.Decoder, n *yaml.Node, what string) (expectation, bool) {
	e := expectation{status: statusSet{classes: []int{2}}}
	if n == nil {
		return e, true
	}
	m := d.Fields(n, what, expectFields...)
	if m == nil {
		return e, false
	}
	ok := true
	if v := m.Get("status"); v != nil {
		s, sok := decodeStatus(d, v, what+": status")
		e.status, ok = s, ok && sok
	}
	if v := m.Get("json"); v != nil {
		if jm := d.Map(v, what+": json"); jm != nil {
			for _, k := range jm.Keys() {
				p, err := ParseJSONPath(k)
				if err != nil {
					d.Errorf(jm.KeyNode(k), "%s: json: %v", what, err)
					ok = false
					continue
				}
				mt, mok := decodeMatcher(d, jm.Get(k), what+": json: "+k)
				e.json, ok = append(e.json, keyed[JSONPath]{p, mt}), ok && mok
			}
		} else {
			ok = false
		}
	}
	if v := m.Get("headers"); v != nil {
		if hm := d.Map(v, what+": headers"); hm != nil {
			for _, k := range hm.Keys() {
				mt, mok := decodeMatcher(d, hm.Get(k), what+": headers: "+k)
				e.headers, ok = append(e.headers, keyed[string]{http.CanonicalHeaderKey(k), mt}), ok && mok
			}
		} else {
			ok = false
		}
	}
	if v := m.Get("body_contains"); v != nil {
		for i, it := range drill.Items(v) {
			t, tok := d.Template(it, fmt.Sprintf("%s: body_contains[%d]", what, i))
			e.bodyContains, ok = append(e.bodyContains, t), ok && tok
		}
	}
	if t, present := m.Duration("max_latency", false); present {
		e.maxLatency = t
	} else if m.Has("max_latency") {
		ok = false
	}
	return e, ok
}

// response is what an HTTP exchange produced, for expectations and outputs.
type response struct {
	status  int
	header  http.Header
	body    []byte
	latency time.Duration
	// doc is the body decoded as JSON (nil with jsonErr when it is not).
	doc     any
	jsonErr error
}

// check returns every failed expectation.
func (e expectation) check(rc *runtime.RunContext, r *response) ([]string, error) {
	var fails []string
	if !e.status.accepts(r.status) {
		fails = append(fails, fmt.Sprintf("status: want %s, got %d", e.status, r.status))
	}
	for _, pm := range e.json {
		if r.jsonErr != nil {
			fails = append(fails, fmt.Sprintf("json: %s: the body is not JSON (%v)", pm.key, r.jsonErr))
			continue
		}
		v, exists, err := pm.key.Eval(r.doc)
		if err != nil {
			fails = append(fails, "json: "+err.Error())
			continue
		}
		fail, err := pm.m.match(rc, v, exists, false)
		if err != nil {
			return nil, err
		}
		if fail != "" {
			fails = append(fails, fmt.Sprintf("json: %s: %s", pm.key, fail))
		}
	}
	for _, hm := range e.headers {
		vals, exists := r.header[hm.key]
		var got any
		if exists && len(vals) > 0 {
			got = vals[0]
		}
		fail, err := hm.m.match(rc, got, exists, true)
		if err != nil {
			return nil, err
		}
		if fail != "" {
			fails = append(fails, fmt.Sprintf("header %s: %s", hm.key, fail))
		}
	}
	for _, t := range e.bodyContains {
		want, err := rc.Expand(t)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(string(r.body), want) {
			fails = append(fails, fmt.Sprintf("body: want it to contain %q", want))
		}
	}
	if e.maxLatency > 0 && r.latency > e.maxLatency {
		fails = append(fails, fmt.Sprintf("latency: want at most %s, took %s", human.Duration(e.maxLatency), human.Duration(drill.DisplayPrecision(r.latency))))
	}
	return fails, nil
}
