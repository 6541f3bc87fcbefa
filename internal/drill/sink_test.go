package drill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// hostileValues are values a hostile HTTP server, table writer or
// environment could hand a drill.
var hostileValues = []string{
	"", "plain",
	`ok"; touch pwned; echo "`, "1$(touch pwned2)", "`touch pwned3`", "'; touch pwned4; '", `\`,
	"a\r\nX-Injected: 1", "a\nb", "a\rb", "nul\x00byte", "\x1b]0;title\x07", "\u202eevil", "\xff\xfe",
	"../../admin", "a/b?c=d&e=f#g", "x&admin=true", "%2e%2e%2fadmin", "%", "@evil.example", "evil.example/x", "h:1@evil",
	`"},"admin":true,"x":{"`, "\u2028", " spaces  around ", "+plus+",
}

// sinkRun returns a run context whose variable v holds value.
func sinkRun(t testing.TB, value string) *RunContext {
	t.Helper()
	d, probs := Parse(Builtin(), "s.yaml", []byte("name: s\ntimeout: 1m\nvars: {v: x}\nsteps: [{sleep: 1s}]\n"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	rc := newRunContext(d, "run1", &Deps{}, nil)
	rc.setVar("v", value, false)
	rc.setVar("base", "http://h:1/p", false)
	return rc
}

func mustTemplate(t testing.TB, raw string) Template {
	t.Helper()
	tm, errs := parseTemplate(raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return tm
}

// checkSinks interpolates v into every sink that interprets text and
// checks that the sink's structure is what the template says, whatever v
// is: the value is data in exactly the place its reference stands, or it
// is refused.
func checkSinks(t *testing.T, v string) {
	rc := sinkRun(t, v)

	// URL: path segment, query value and fragment are percent-encoded.
	s, err := rc.ExpandURL(mustTemplate(t, "${vars.base}/a/${vars.v}/b?q=${vars.v}&k=1#${vars.v}"))
	if err != nil {
		t.Fatalf("url with %q in path, query and fragment: %v", v, err)
	}
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("%q does not parse: %v", s, err)
	}
	segs := strings.Split(u.EscapedPath(), "/")
	if u.Scheme != "http" || u.Host != "h:1" || u.User != nil || len(segs) != 5 || segs[1] != "p" || segs[2] != "a" || segs[4] != "b" {
		t.Fatalf("%q changed the URL's structure: %q", v, s)
	}
	if got, err := url.PathUnescape(segs[3]); err != nil || got != v {
		t.Fatalf("path segment of %q = %q (%v)", v, got, err)
	}
	if q := u.Query(); len(q) != 2 || !reflect.DeepEqual(q["q"], []string{v}) || !reflect.DeepEqual(q["k"], []string{"1"}) {
		t.Fatalf("%q changed the query: %q", v, u.RawQuery)
	}
	if u.Fragment != v {
		t.Fatalf("fragment of %q = %q", v, u.Fragment)
	}

	// URL: a host part takes a host or port, nothing else.
	if s, err := rc.ExpandURL(mustTemplate(t, "http://${vars.v}:1/x?k=1")); err == nil {
		u, err := url.Parse(s)
		if err != nil || u.User != nil || u.Path != "/x" || u.RawQuery != "k=1" || u.Fragment != "" || !validHost(u.Host) {
			t.Fatalf("%q as a host made %q", v, s)
		}
	}
	// URL: a base followed by a path cannot bring a query or fragment.
	if s, err := rc.ExpandURL(mustTemplate(t, "${vars.v}/x?k=1")); err == nil {
		u, err := url.Parse(s)
		if err != nil || u.User != nil || !strings.HasSuffix(u.Path, "/x") || u.RawQuery != "k=1" || u.Fragment != "" {
			t.Fatalf("%q as a base made %q", v, s)
		}
	}

	// Header: the value is one header's value, or refused.
	if hv, err := rc.ExpandHeader("X-T", mustTemplate(t, "a ${vars.v}")); err == nil {
		h := http.Header{}
		h.Set("X-T", hv)
		var buf bytes.Buffer
		if err := h.Write(&buf); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("\r\n")
		got, err := textproto.NewReader(bufio.NewReader(&buf)).ReadMIMEHeader()
		if err != nil || len(got) != 1 || len(got["X-T"]) != 1 || got.Get("X-T") != strings.Trim("a "+v, " \t") {
			t.Fatalf("%q in a header made %q (%v)", v, got, err)
		}
	} else if headerControl(v) < 0 {
		t.Fatalf("%q holds no control character but was refused: %v", v, err)
	}

	if _, err := rc.ExpandHeader("X-T", Literal("a\r\nX-Injected: 1")); err == nil {
		t.Fatal("a literal header value with CR/LF was accepted")
	}

	// JSON body: one JSON string, whatever the value.
	body, err := resolveValue(rc, map[string]any{"a": mustTemplate(t, "${vars.v}"), "n": 1.0, "l": []any{mustTemplate(t, "x${vars.v}")}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%q made a JSON body that does not parse: %s", v, b)
	}
	want := map[string]any{"a": utf8Valid(v), "n": 1.0, "l": []any{utf8Valid("x" + v)}}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("%q changed the JSON body: %s", v, b)
	}

	// The journal (JSON, and YAML as -o yaml prints it) and the JUnit report
	// (XML) written back.
	j := &Journal{Kind: "DrillRun", Drill: DrillInfo{Name: "s"}, Outcome: OutcomeFailed, Reason: v,
		Steps: []StepRecord{{ID: "a", Kind: "http", Status: StatusFailed, Detail: v, Error: v, Outputs: map[string]string{"body": v}}}}
	b, err = json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var jb Journal
	if err := json.Unmarshal(b, &jb); err != nil || len(jb.Steps) != 1 || jb.Steps[0].Outputs["body"] != utf8Valid(v) || jb.Reason != utf8Valid(v) {
		t.Fatalf("%q changed the journal: %s (%v)", v, b, err)
	}
	var yb bytes.Buffer
	if err := cmdutil.PrintStructured(&yb, cmdutil.FormatYAML, j); err != nil {
		t.Fatal(err)
	}
	var jy struct {
		Reason string `yaml:"reason"`
		Steps  []struct {
			Outputs map[string]string `yaml:"outputs"`
		} `yaml:"steps"`
	}
	if err := yaml.Unmarshal(yb.Bytes(), &jy); err != nil || jy.Reason != utf8Valid(v) || len(jy.Steps) != 1 || jy.Steps[0].Outputs["body"] != utf8Valid(v) {
		t.Fatalf("%q changed the journal as YAML: %v\n%s", v, err, yb.Bytes())
	}
	x, err := JUnit(j)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(x, &suites); err != nil || len(suites.Suites) != 1 || len(suites.Suites[0].Cases) != 1 {
		t.Fatalf("%q changed the JUnit report: %v\n%s", v, err, x)
	}
}

// utf8Valid is s as encoding/json writes it: each byte that is not UTF-8
// becomes U+FFFD.
func utf8Valid(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

func TestInterpolatedValuesCannotChangeASinksStructure(t *testing.T) {
	for _, v := range hostileValues {
		checkSinks(t, v)
	}
}

// FuzzInterpolation: any value, interpolated into a URL, a header, a JSON
// body, the journal or the JUnit report, leaves the sink's structure as
// the template wrote it (or is refused).
func FuzzInterpolation(f *testing.F) {
	for _, v := range hostileValues {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { checkSinks(t, v) })
}

// Any reference in a shell command is a problem, whatever it names; the
// values reach the command only through its environment, where the shell
// never parses them.
func TestShellCommandsTakeNoReferences(t *testing.T) {
	for _, tc := range []struct{ run, want string }{
		{`echo ${vars.v}`, `use "$DRILL_VAR_V" from its environment`},
		{`echo "${steps.probe.body}"`, `use "$DRILL_STEP_PROBE_BODY" from its environment`},
		{`echo ${steps.probe.json.a.b}`, `pass it in the environment, env: {PROBE_JSON_A_B: "${steps.probe.json.a.b}"}, and use "$PROBE_JSON_A_B"`},
		{`echo ${steps.probe.json.items[0].id}`, `env: {PROBE_JSON_ITEMS_0_ID: "${steps.probe.json.items[0].id}"}, and use "$PROBE_JSON_ITEMS_0_ID"`},
		{`echo ${steps.9lives.header.x-id}`, `env: {STEP_9LIVES_HEADER_X_ID: "${steps.9lives.header.x-id}"}, and use "$STEP_9LIVES_HEADER_X_ID"`},
		{`echo ${env.HOME}`, `use "$HOME" (the command inherits koshactl's environment)`},
		{`echo ${env.X:-y}`, `use "$${X:-y}" (the command inherits koshactl's environment)`},
		{`echo ${drill.run_id}`, `use "$DRILL_RUN_ID" from its environment`},
	} {
		src := "name: s\ntimeout: 1m\nvars: {v: x}\nsteps:\n  - id: probe\n    http: {url: \"http://h/\"}\n  - id: 9lives\n    http: {url: \"http://h/\"}\n  - shell: '" + tc.run + "'\n"
		_, probs := Parse(Builtin(), "s.yaml", []byte(src))
		if len(probs) != 1 || !strings.Contains(probs[0].Message, "a shell command takes no ${...} references (the value would become shell code)") ||
			!strings.HasSuffix(probs[0].Message, tc.want) {
			t.Errorf("%s: problems %v, want one ending %s", tc.run, probs, tc.want)
		}
	}
	// What the message suggests is a valid drill.
	parse(t, "name: s\ntimeout: 1m\nsteps:\n  - id: 9lives\n    http: {url: \"http://h/\"}\n"+
		"  - shell: {run: 'echo \"$STEP_9LIVES_HEADER_X_ID\"', env: {STEP_9LIVES_HEADER_X_ID: \"${steps.9lives.header.x-id}\"}}\n")
	// A command built in code with a reference is refused when it runs.
	tm, _ := parseTemplate("echo ${vars.v}")
	if _, err := (&shellSpec{run: tm, shell: DefaultShell}).exec(context.Background(), sinkRun(t, "$(touch pwned)")); err == nil ||
		!strings.Contains(err.Error(), "a shell command takes no ${...} references") {
		t.Errorf("exec of a command with a reference: %v", err)
	}
	// $${ is still a literal ${ for the shell's own expansion.
	d := parse(t, "name: s\ntimeout: 1m\nsteps:\n  - shell: 'echo \"$${DRILL_NAME}\"'\n")
	if got := d.Steps[0].Action.(*shellStep).spec.run.Raw(); got != `echo "$${DRILL_NAME}"` {
		t.Errorf("run = %q", got)
	}
}

// Every hostile value reaches a shell command through its environment as
// the same bytes, and runs nothing.
func TestShellReceivesHostileValuesAsData(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	e.svc.Environ = []string{"PATH=/usr/bin:/bin"}
	for _, v := range hostileValues {
		d := parse(t, "name: s\ntimeout: 1m\nvars: {v: x}\nsteps:\n  - shell:\n      run: printf '%s|' \"$DRILL_VAR_V\" \"$V\"\n      env: {V: \"${vars.v}\"}\n      dir: "+dir+"\n")
		rc := newRunContext(d, "run1", e.svc, nil)
		rc.setVar("v", v, false)
		r, err := d.Steps[0].Action.(*shellStep).spec.exec(context.Background(), rc)
		if strings.IndexByte(v, 0) >= 0 {
			if err == nil || !strings.Contains(err.Error(), "env V: the value holds a NUL byte") {
				t.Errorf("%q: err = %v", v, err)
			}
			continue
		}
		if err != nil || r.exitCode != 0 {
			t.Fatalf("%q: %v %+v", v, err, r)
		}
		if want := strings.TrimRight(v+"|"+v+"|", "\n"); r.stdout != want {
			t.Errorf("%q: stdout %q, want %q", v, r.stdout, want)
		}
	}
	noFilesIn(t, dir)
}

// A variable or output holding NUL is left out of the environment, with a
// notice, instead of failing every later shell step.
func TestShellEnvironmentLeavesOutANULValue(t *testing.T) {
	e := newEnv(t)
	d := parse(t, "name: s\ntimeout: 1m\nvars: {v: x, w: y}\nsteps:\n  - shell: 'printf \"%s|%s\" \"$${DRILL_VAR_V-unset}\" \"$DRILL_VAR_W\"'\n")
	var notes []string
	rc := newRunContext(d, "run1", e.svc, func(s string) { notes = append(notes, s) })
	rc.setVar("v", "a\x00b", false)
	rc.setVar("w", "fine", false)
	r, err := d.Steps[0].Action.(*shellStep).spec.exec(context.Background(), rc)
	if err != nil || r.stdout != "unset|fine" {
		t.Fatalf("%v %+v", err, r)
	}
	if len(notes) != 1 || notes[0] != "DRILL_VAR_V is not set for the command: its value holds a NUL byte, which an environment variable cannot carry" {
		t.Errorf("notices = %q", notes)
	}
}

func noFilesIn(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ents {
		t.Errorf("a value ran as shell code: %s was created", n.Name())
	}
}
