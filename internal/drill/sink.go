package drill

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/lazyre"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Reference namespaces a template may use.
const (
	// NSSteps: ${steps.<id>.<output>}, an output of an earlier step.
	NSSteps = "steps"
	// NSVars: ${vars.<name>}, a variable of the drill's vars.
	NSVars = "vars"
	// NSEnv: ${env.<NAME>} or ${env.<NAME>:-default}, koshactl's environment.
	NSEnv = "env"
	// NSDrill: ${drill.name}, ${drill.run_id}, ${drill.context}, ${drill.deadline}.
	NSDrill = "drill"
)

// DrillFields are the names ${drill.<name>} accepts.
var DrillFields = []string{"name", "run_id", "context", "deadline"}

var (
	stepIDRE  = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	varNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_-]{0,62}$`)
	envNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Template is a string that may reference values known only at run time:
// ${steps.ID.OUTPUT}, ${vars.NAME}, ${env.NAME}, ${env.NAME:-default},
// ${drill.FIELD}. $${ is a literal ${. The zero Template is the empty
// string.
type Template struct {
	raw   string
	parts []tpart
	// line is the line of the YAML scalar the template came from (zero
	// for templates built in code).
	line int
}

type tpart struct {
	lit string
	ref *Ref
}

// Ref is one ${...} reference of a template.
type Ref struct {
	// Namespace is one of NSSteps, NSVars, NSEnv, NSDrill.
	Namespace string
	// Name is the step id, variable name, environment variable or drill
	// field.
	Name string
	// Output is the step output named (steps only); it may contain dots
	// (json.result.degraded).
	Output string
	// Default is the text used when an environment variable is unset (env
	// only, with :-).
	Default    string
	HasDefault bool
	// Offset is the byte offset of "${" in the template text.
	Offset int
	// Text is the reference as written, "${...}".
	Text string
}

// templateError is a syntax problem at a byte offset of a template.
type templateError struct {
	off int
	msg string
}

// Literal returns a template of fixed text.
func Literal(s string) Template { return Template{raw: s, parts: []tpart{{lit: s}}} }

// IsZero reports whether the template is empty.
func (t Template) IsZero() bool { return t.raw == "" }

// Refs returns the template's references in order.
func (t Template) Refs() []Ref {
	var out []Ref
	for _, p := range t.parts {
		if p.ref != nil {
			out = append(out, *p.ref)
		}
	}
	return out
}

// Static returns the template's text when it references nothing.
func (t Template) Static() (string, bool) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref != nil {
			return "", false
		}
		b.WriteString(p.lit)
	}
	return b.String(), true
}

// String returns the template as written.
func (t Template) String() string { return t.raw }

// parseTemplate splits raw into literal text and references.
func parseTemplate(raw string) (Template, []templateError) {
	t := Template{raw: raw}
	var errs []templateError
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, tpart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(raw); {
		switch {
		case strings.HasPrefix(raw[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(raw[i:], "${"):
			end := strings.IndexByte(raw[i:], '}')
			if end < 0 {
				errs = append(errs, templateError{i, "unterminated ${ (close it with }, or write $${ for a literal ${)"})
				lit.WriteString(raw[i:])
				i = len(raw)
				continue
			}
			text := raw[i : i+end+1]
			ref, msg := parseRef(text[2 : len(text)-1])
			if msg != "" {
				errs = append(errs, templateError{i, textsafe.Line(text) + ": " + msg})
			} else {
				ref.Offset, ref.Text = i, text
				flush()
				t.parts = append(t.parts, tpart{ref: &ref})
			}
			i += end + 1
		default:
			lit.WriteByte(raw[i])
			i++
		}
	}
	flush()
	return t, errs
}

func parseRef(body string) (Ref, string) {
	ns, rest, ok := strings.Cut(body, ".")
	if !ok || rest == "" {
		return Ref{}, "a reference is ${steps.ID.OUTPUT}, ${vars.NAME}, ${env.NAME} or ${drill.FIELD}"
	}
	r := Ref{Namespace: ns}
	switch ns {
	case NSSteps:
		id, out, ok := strings.Cut(rest, ".")
		if !ok || out == "" {
			return Ref{}, "name the step and its output, like ${steps.sign.header}"
		}
		if !stepIDRE.MatchString(id) {
			return Ref{}, fmt.Sprintf("%q is not a step id", id)
		}
		r.Name, r.Output = id, out
	case NSVars:
		if !varNameRE.MatchString(rest) {
			return Ref{}, fmt.Sprintf("%q is not a variable name", rest)
		}
		r.Name = rest
	case NSEnv:
		name, def, hasDef := strings.Cut(rest, ":-")
		if !envNameRE.MatchString(name) {
			return Ref{}, fmt.Sprintf("%q is not an environment variable name", name)
		}
		r.Name, r.Default, r.HasDefault = name, def, hasDef
	case NSDrill:
		if !slices.Contains(DrillFields, rest) {
			return Ref{}, fmt.Sprintf("drill has no field %q: use one of %s%s", rest, strings.Join(DrillFields, ", "), DidYouMean(rest, DrillFields))
		}
		r.Name = rest
	default:
		return Ref{}, fmt.Sprintf("unknown namespace %q: use steps, vars, env or drill%s", ns, DidYouMean(ns, []string{NSSteps, NSVars, NSEnv, NSDrill}))
	}
	return r, ""
}

// Resolver supplies reference values when a template is expanded.
type Resolver interface {
	// Lookup returns the value of ref, and whether it is a secret.
	Lookup(ref Ref) (value string, secret bool, err error)
}

// Expand resolves every reference of t. secret reports whether any
// resolved value was a secret (the result must then not be reported).
func (t Template) Expand(r Resolver) (s string, secret bool, err error) { return t.expand(r, nil) }

// expand is Expand passing the i-th reference's value, when enc is set,
// through enc, which encodes it for the sink (or refuses it).
func (t Template) expand(r Resolver, enc func(i int, ref Ref, value string) (string, error)) (string, bool, error) {
	if len(t.parts) == 1 && t.parts[0].ref == nil {
		return t.parts[0].lit, false, nil
	}
	secret := false
	var b strings.Builder
	i := 0
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.lit)
			continue
		}
		v, sec, err := r.Lookup(*p.ref)
		if err == nil && enc != nil {
			v, err = enc(i, *p.ref, v)
		}
		i++
		if err != nil {
			if t.line > 0 {
				return "", false, fmt.Errorf("expand %s (line %d): %w", p.ref.Text, t.line, err)
			}
			return "", false, fmt.Errorf("expand %s: %w", p.ref.Text, err)
		}
		secret = secret || sec
		b.WriteString(v)
	}
	return b.String(), secret, nil
}

// Sinks: where an interpolated value could turn into structure.
//
// A template's references are resolved at run time from what the drill
// reads: step outputs (HTTP bodies and headers, override actors and
// reasons, command output), the environment, --var. None of it is trusted
// to be code or structure. Every templated field is one of these sinks,
// and the decoder method that reads it decides what a value may do there
// (docs/contracts/drill-file.md, "Where values go"):
//
//   - text ([Decoder.Template]): the value is the text (reasons,
//     dependency names, client ids, expected values, env values, dir);
//     nothing interprets it.
//   - shell command ([Decoder.Command]): takes no reference at all; every
//     value reaches the command as an environment variable, and the parser
//     names the one to use.
//   - URL ([Decoder.URL]): a reference that starts the URL supplies its
//     base (scheme, host, a path prefix); one in the host part must be a
//     host or port; one in the path, query or fragment is percent-encoded
//     as a path segment or query value ([Template.ExpandURL]). Step
//     outputs may not choose the base or the host.
//   - HTTP header value ([Map.HeaderMap], [Template.ExpandHeader]): a
//     value holding CR, LF, NUL or another control character is refused.
//   - JSON body (json:): each templated string becomes one JSON string
//     (encoding/json), never spliced text.
//   - raw body (body:): sent as written; step outputs are refused there.
//   - environment variables of a shell command: a value holding NUL,
//     which the environment cannot carry, is not passed.
//
// A kind that adds a templated field picks the decoder method of its sink;
// a new sink gets its own method here, with its rule and a case in the
// sink tests (sink_test.go).

// refusal returns why ref, the i-th reference of t, may not be used in a
// sink ("" when it may).
type refusal func(t Template, i int, ref Ref) string

// Command decodes n as a shell command: a template with no references
// ($${ still writes a literal ${). Each reference is a problem that names
// the environment variable holding the value.
func (d *Decoder) Command(n *yaml.Node, what string) (Template, bool) {
	return d.templateFor(n, what, func(_ Template, _ int, r Ref) string { return d.shellRefusal(r) })
}

// Command decodes key as a shell command (see [Decoder.Command]).
func (m *Map) Command(key string, required bool) (Template, bool) {
	return field(m, key, required, m.d.Command)
}

func (d *Decoder) shellRefusal(r Ref) string {
	const why = "a shell command takes no ${...} references (the value would become shell code): "
	switch r.Namespace {
	case NSSteps:
		if kind, ok := d.scope.earlier[r.Name]; ok && !slices.Contains(kind.Outputs(), r.Output) {
			// A family output (header.NAME, json.PATH) has no variable of
			// its own: the step's env: gives it one.
			v := suggestEnvName(r.Name, r.Output)
			return why + fmt.Sprintf(`pass it in the environment, env: {%s: "%s"}, and use "$%s"`, v, r.Text, v)
		}
		return why + fmt.Sprintf(`use "$%s" from its environment`, EnvName("DRILL_STEP", r.Name, r.Output))
	case NSVars:
		return why + fmt.Sprintf(`use "$%s" from its environment`, EnvName("DRILL_VAR", r.Name))
	case NSDrill:
		return why + fmt.Sprintf(`use "$%s" from its environment`, EnvName("DRILL", r.Name))
	case NSEnv:
		if r.HasDefault {
			return why + fmt.Sprintf(`use "$${%s:-%s}" (the command inherits koshactl's environment)`, r.Name, r.Default)
		}
		return why + fmt.Sprintf(`use "$%s" (the command inherits koshactl's environment)`, r.Name)
	}
	return why + "pass the value in the command's env:"
}

// suggestEnvName makes a readable environment variable name for a step
// output: PROBE_HEADER_X_ID for probe and header.x-id, no runs of '_', and
// never starting with a digit.
func suggestEnvName(id, output string) string {
	var b strings.Builder
	for _, c := range EnvName(id, output) {
		if c == '_' && (b.Len() == 0 || strings.HasSuffix(b.String(), "_")) {
			continue
		}
		b.WriteRune(c)
	}
	v := strings.TrimSuffix(b.String(), "_")
	if v == "" || (v[0] >= '0' && v[0] <= '9') {
		v = "STEP_" + v
	}
	return v
}

// Body decodes n as a raw request body: variables and the environment are
// sent as written; step outputs are refused (json: encodes them).
func (d *Decoder) Body(n *yaml.Node, what string) (Template, bool) {
	return d.templateFor(n, what, func(_ Template, _ int, r Ref) string {
		if r.Namespace == NSSteps {
			return "a step output would be spliced into the raw body unencoded: send the body as json:, where each value becomes one JSON string"
		}
		return ""
	})
}

// URL decodes n as a URL template. A static URL must be http:// or
// https:// with a host; a reference may not be part of the scheme; step
// outputs may not choose the base or the host. What values may be is
// checked by [Template.ExpandURL].
func (d *Decoder) URL(n *yaml.Node, what string) (Template, bool) {
	t, ok := d.templateFor(n, what, func(t Template, i int, r Ref) string {
		p := urlPositions(t)[i]
		switch {
		case p == urlScheme:
			return "a reference cannot be part of the URL's scheme: write http:// or https:// in the file, or make the reference the start of the URL"
		case r.Namespace == NSSteps && (p == urlBase || p == urlHost):
			return "a step output cannot choose the host a request goes to: start the URL with text or a variable, and use the output in the path or query, where it is percent-encoded"
		}
		return ""
	})
	if ok {
		if s, static := t.Static(); static {
			if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.Errorf(n, "%s: %q is not an http:// or https:// URL", what, s)
				ok = false
			}
		}
	}
	return t, ok
}

// URL decodes key as a URL template (see [Decoder.URL]).
func (m *Map) URL(key string, required bool) (Template, bool) {
	return field(m, key, required, m.d.URL)
}

// HeaderMap decodes key as HTTP headers: names are header tokens, and the
// literal text of a value holds no control character (values are checked
// again when expanded, by [Template.ExpandHeader]).
func (m *Map) HeaderMap(key string) []NamedTemplate {
	return m.templateMap(key, func(kn *yaml.Node, h NamedTemplate) bool {
		if h.Name == "" || !onlyAlnumOr(h.Name, "!#$%&'*+-.^_`|~") { // an RFC 9110 token
			m.d.Errorf(kn, "%s: %s: %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~)", m.what, key, h.Name)
			return false
		}
		if s, static := h.Value.Static(); static {
			if i := headerControl(s); i >= 0 {
				m.d.Errorf(kn, "%s: %s: %s: the value holds a control character (%q at byte %d): a header value cannot carry one", m.what, key, h.Name, s[i], i)
				return false
			}
		}
		return true
	})
}

// onlyAlnumOr reports whether every byte of s is an ASCII letter or digit,
// or one of extra.
func onlyAlnumOr(s, extra string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune(extra, r)
	})
}

// headerControl returns the index of the first byte of s a header value
// cannot carry (a control character other than tab, or DEL), or -1.
func headerControl(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return i
		}
	}
	return -1
}

// urlPos is where in a URL a reference stands.
type urlPos uint8

const (
	// urlBase: the reference starts the URL and supplies its base.
	urlBase urlPos = iota
	// urlScheme: inside the scheme (refused).
	urlScheme
	// urlHost: after "://" (or right after the base) and before the path.
	urlHost
	urlPath
	urlQuery
	urlFragment
)

// urlPositions classifies each reference of a URL template by the literal
// text before it. The text after a base reference continues the base: a
// port, or a path.
func urlPositions(t Template) []urlPos {
	var out []urlPos
	state := urlBase // nothing seen yet
	for _, p := range t.parts {
		if p.ref != nil {
			out = append(out, state)
			if state == urlBase {
				state = urlHost
			}
			continue
		}
		s := p.lit
		if state <= urlScheme { // text before "://" is the scheme
			i := strings.Index(s, "://")
			if i < 0 {
				if s != "" {
					state = urlScheme
				}
				continue
			}
			state, s = urlHost, s[i+len("://"):]
		}
		for _, c := range s {
			switch {
			case c == '#' && state < urlFragment:
				state = urlFragment
			case c == '?' && state < urlQuery:
				state = urlQuery
			case c == '/' && state == urlHost:
				state = urlPath
			}
		}
	}
	return out
}

// Redactor is a [Resolver] that also hides the run's secret values in a
// message (runtime.RunContext is one).
type Redactor interface {
	Resolver
	Redact(s string) string
}

// validHost reports whether s can only be (part of) a host or a port:
// letters, digits, '.', '-', '_', ':' and the brackets of an IPv6 address.
func validHost(s string) bool { return onlyAlnumOr(s, ".-_:[]") }

// ExpandURL expands a URL template so that no value changes the URL's
// structure: a reference that starts the URL must be an http(s) base URL
// (scheme, host, optionally a path; a query or fragment only when nothing
// follows it), one in the host part a host or port, and values in the
// path, query and fragment are percent-encoded as one path segment or
// query value. The result must be an http:// or https:// URL.
func (t Template) ExpandURL(rc Redactor) (string, error) {
	pos := urlPositions(t)
	whole := len(t.parts) == 1
	s, _, err := t.expand(rc, func(i int, _ Ref, v string) (string, error) {
		switch pos[i] {
		case urlBase:
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
				return "", fmt.Errorf("the value %q is not an http:// or https:// base URL with a host (and no user)", rc.Redact(v))
			}
			if !whole && strings.ContainsAny(v, "?#") {
				return "", fmt.Errorf("the value %q holds a query or fragment, and more of the URL follows it: put the query in the file after the path", rc.Redact(v))
			}
			return v, nil
		case urlHost:
			if !validHost(v) {
				return "", fmt.Errorf("the value %q is not a host or port (letters, digits, '.', '-', '_', ':', '[', ']')", rc.Redact(v))
			}
			return v, nil
		case urlQuery:
			return url.QueryEscape(v), nil
		case urlPath, urlFragment:
			return url.PathEscape(v), nil
		case urlScheme:
		}
		return "", errors.New("a reference cannot be part of the URL's scheme")
	})
	if err != nil {
		return "", err
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL", rc.Redact(s))
	}
	return s, nil
}

// ExpandHeader expands the value of header name, refusing a value that
// holds a control character (CR, LF, NUL, ...): it could end the header
// and start another, or the request.
func (t Template) ExpandHeader(rc Resolver, name string) (string, error) {
	s, _, err := t.expand(rc, func(_ int, _ Ref, v string) (string, error) {
		if i := headerControl(v); i >= 0 {
			return "", fmt.Errorf("the value holds a control character (%q at byte %d): header %s cannot carry one", v[i], i, name)
		}
		return v, nil
	})
	if err != nil {
		return "", err
	}
	// The literal text too, for templates built in code.
	if i := headerControl(s); i >= 0 {
		return "", fmt.Errorf("header %s: the value holds a control character (%q at byte %d)", name, s[i], i)
	}
	return s, nil
}

// EnvCarries reports whether value can be carried by an environment
// variable (it holds no NUL byte).
func EnvCarries(value string) bool { return strings.IndexByte(value, 0) < 0 }

// ValidEnvName reports whether name can name an environment variable.
func ValidEnvName(name string) bool { return envNameRE.MatchString(name) }

// ValidStepID reports whether id is a step id a drill may write.
func ValidStepID(id string) bool { return stepIDRE.MatchString(id) }

// EnvName turns a step id and output name into DRILL_STEP_<ID>_<OUTPUT>.
func EnvName(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('_')
		}
		for _, r := range p {
			if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				b.WriteRune(unicode.ToUpper(r))
			} else {
				b.WriteByte('_')
			}
		}
	}
	return b.String()
}

// ExpandValue expands every template inside v (as [Decoder.Value] returns it) into a plain JSON-like
// value (strings, float64, bool, nil, []any, map[string]any).
func ExpandValue(rc Resolver, v any) (any, error) {
	return MapValue(v, func(leaf any) (any, error) {
		if t, ok := leaf.(Template); ok {
			s, _, err := t.Expand(rc)
			return s, err
		}
		return leaf, nil
	})
}

// MapValue is v, a JSON-like value, with each leaf (anything but a []any
// or a map[string]any) replaced by f's value; f's first error ends it.
func MapValue(v any, f func(leaf any) (any, error)) (any, error) {
	var err error
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if out[i], err = MapValue(e, f); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if out[k], err = MapValue(e, f); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return f(v)
}
