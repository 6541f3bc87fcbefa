package drill_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
)

// sinkVars resolves ${vars.NAME} from its map, as a run does.
type sinkVars map[string]string

func (v sinkVars) Lookup(r drill.Ref) (string, bool, error) {
	if s, ok := v[r.Name]; ok && r.Namespace == drill.NSVars {
		return s, false, nil
	}
	return "", false, fmt.Errorf("no %s", r.Text)
}

func (v sinkVars) Redact(s string) string { return s }

// sinkRun returns a resolver whose variable v holds value.
func sinkRun(value string) sinkVars { return sinkVars{"v": value, "base": "http://h:1/p"} }

func mustTemplate(t testing.TB, raw string) drill.Template {
	t.Helper()
	tm, err := drill.ParseTemplate(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// checkSinks interpolates v into every sink that interprets text and
// checks that the sink's structure is what the template says, whatever v
// is: the value is data in exactly the place its reference stands, or it
// is refused.
func checkSinks(t *testing.T, v string) {
	rc := sinkRun(v)

	// URL: path segment, query value and fragment are percent-encoded.
	s, err := mustTemplate(t, "${vars.base}/a/${vars.v}/b?q=${vars.v}&k=1#${vars.v}").ExpandURL(rc)
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
	if s, err := mustTemplate(t, "http://${vars.v}:1/x?k=1").ExpandURL(rc); err == nil {
		u, err := url.Parse(s)
		if err != nil || u.User != nil || u.Path != "/x" || u.RawQuery != "k=1" || u.Fragment != "" || !drill.ValidHost(u.Host) {
			t.Fatalf("%q as a host made %q", v, s)
		}
	}
	// URL: a base followed by a path cannot bring a query or fragment.
	if s, err := mustTemplate(t, "${vars.v}/x?k=1").ExpandURL(rc); err == nil {
		u, err := url.Parse(s)
		if err != nil || u.User != nil || !strings.HasSuffix(u.Path, "/x") || u.RawQuery != "k=1" || u.Fragment != "" {
			t.Fatalf("%q as a base made %q", v, s)
		}
	}

	// Header: the value is one header's value, or refused.
	if hv, err := mustTemplate(t, "a ${vars.v}").ExpandHeader(rc, "X-T"); err == nil {
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
	} else if drill.HeaderControl(v) < 0 {
		t.Fatalf("%q holds no control character but was refused: %v", v, err)
	}

	if _, err := drill.Literal("a\r\nX-Injected: 1").ExpandHeader(rc, "X-T"); err == nil {
		t.Fatal("a literal header value with CR/LF was accepted")
	}

	// JSON body: one JSON string, whatever the value.
	body, err := drill.ExpandValue(rc, map[string]any{"a": mustTemplate(t, "${vars.v}"), "n": 1.0, "l": []any{mustTemplate(t, "x${vars.v}")}})
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

	// The journal, as JSON and as YAML (-o yaml prints it), written back.
	// (The JUnit report is the runner's: FuzzJUnit.)
	j := &drill.Journal{Kind: "DrillRun", Drill: drill.DrillInfo{Name: "s"}, Outcome: drill.OutcomeFailed, Reason: v,
		Steps: []drill.StepRecord{{ID: "a", Kind: "http", Status: drill.StatusFailed, Detail: v, Error: v, Outputs: map[string]string{"body": v}}}}
	b, err = json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var jb drill.Journal
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
	for _, v := range drilltest.HostileValues {
		checkSinks(t, v)
	}
}

// FuzzInterpolation: any value, interpolated into a URL, a header, a JSON
// body or the journal, leaves the sink's structure as
// the template wrote it (or is refused).
func FuzzInterpolation(f *testing.F) {
	for _, v := range drilltest.HostileValues {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { checkSinks(t, v) })
}
