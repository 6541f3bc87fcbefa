package drill

import (
	"errors"
	"strings"
	"testing"
)

type mapResolver map[string]string

func (m mapResolver) Lookup(r Ref) (string, bool, error) {
	key := r.Namespace + "." + r.Name
	if r.Output != "" {
		key += "." + r.Output
	}
	v, ok := m[key]
	if !ok {
		if r.HasDefault {
			return r.Default, false, nil
		}
		return "", false, errors.New("unset")
	}
	return v, strings.HasPrefix(key, "steps.sign.header"), nil
}

func TestTemplateParseAndExpand(t *testing.T) {
	res := mapResolver{"vars.base": "http://h:1", "steps.sign.header": "v=1;sig=abc", "steps.call.json.result.items[0].id": "7", "env.HOME": "/home/x"}
	for _, tc := range []struct {
		raw, want string
		secret    bool
		refs      int
	}{
		{"plain text", "plain text", false, 0},
		{"${vars.base}/mcp", "http://h:1/mcp", false, 1},
		{"$${vars.base} is literal; $ alone too; $$ too", "${vars.base} is literal; $ alone too; $$ too", false, 0},
		{"H: ${steps.sign.header}", "H: v=1;sig=abc", true, 1},
		{"id=${steps.call.json.result.items[0].id}", "id=7", false, 1},
		{"${env.UNSET:-fallback}:${env.HOME}", "fallback:/home/x", false, 2},
		{"${env.EMPTY_DEFAULT:-}x", "x", false, 1},
	} {
		tpl, errs := parseTemplate(tc.raw)
		if len(errs) > 0 {
			t.Errorf("%q: %v", tc.raw, errs)
			continue
		}
		got, secret, err := tpl.Expand(res)
		if err != nil || got != tc.want || secret != tc.secret || len(tpl.Refs()) != tc.refs {
			t.Errorf("%q expands to %q (secret %v, %d refs, %v), want %q (secret %v, %d refs)", tc.raw, got, secret, len(tpl.Refs()), err, tc.want, tc.secret, tc.refs)
		}
	}
	if _, _, err := Literal("x").Expand(nil); err != nil {
		t.Errorf("a literal needs no resolver: %v", err)
	}
	tpl, _ := parseTemplate("${env.NOPE}")
	if _, _, err := tpl.Expand(res); err == nil || !strings.Contains(err.Error(), "expand ${env.NOPE}: unset") {
		t.Errorf("missing value: %v", err)
	}
}

func TestTemplateSyntaxErrors(t *testing.T) {
	for raw, want := range map[string]string{
		"a ${vars.x":          "unterminated ${",
		"${nope}":             "a reference is ${steps.ID.OUTPUT}",
		"${vars.}":            "a reference is ${steps.ID.OUTPUT}",
		"${steps.sign}":       "name the step and its output",
		"${steps.Sign.x}":     `"Sign" is not a step id`,
		"${env.A-B}":          `"A-B" is not an environment variable name`,
		"${drill.nam}":        `drill has no field "nam"`,
		"${var.x}":            `unknown namespace "var": use steps, vars, env or drill (did you mean "vars"?)`,
		"ok ${vars.a} ${x.y}": `${x.y}: unknown namespace "x"`,
	} {
		_, errs := parseTemplate(raw)
		if len(errs) != 1 || !strings.Contains(errs[0].msg, want) {
			t.Errorf("%q: errors %v, want one containing %q", raw, errs, want)
		}
	}
	_, errs := parseTemplate("ok ${vars.a} ${x.y}")
	if errs[0].off != 13 {
		t.Errorf("error offset %d, want 13 (the second reference)", errs[0].off)
	}
}
