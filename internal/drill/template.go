package drill

import (
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lazyre"
	"slices"
	"strings"
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

// Raw returns the template as written.
func (t Template) Raw() string { return t.raw }

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

// ParseTemplate parses raw as a template built in code; the error names
// its first syntax error. (Templates from a drill file come from the
// [Decoder], which checks each reference against the file.)
func ParseTemplate(raw string) (Template, error) {
	t, errs := parseTemplate(raw)
	if len(errs) > 0 {
		return Template{}, fmt.Errorf("template %q: %s", raw, errs[0].msg)
	}
	return t, nil
}

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
				errs = append(errs, templateError{i, fmt.Sprintf("%s: %s", text, msg)})
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
