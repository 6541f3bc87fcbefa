package kinds

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
)

// TestHTTPExpectations runs http steps against a handler and checks each
// kind of expectation, passing and failing.
func TestHTTPExpectations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := drilltest.NewEnv(t)
		e.Deps.HTTP = drilltest.HandlerDoer{H: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil {
				time.Sleep(d)
			}
			if r.Header.Get("Authorization") != "Bearer tok" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Retry-After", "3")
			w.Header().Set("X-Flag", "true")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"code":-32029,"data":{"error":"rate_limited","retry_after_s":3,"tags":["a","b"],"msg":"slow down, client-7"}},"n":null}`)
		})}
		step := func(expect string) string {
			d := drilltest.Parse(t, Builtin(), `
name: x
timeout: 1m
vars:
  tok: tok
  code: rate_limited
steps:
  - http:
      url: "http://h/x?delay=1500ms"
      headers: {Authorization: "Bearer ${vars.tok}"}
      expect:
`+expect)
			if steps, _ := e.Steps(context.Background(), e.RunContext(d)); steps[0].Err != nil {
				return steps[0].Err.Error()
			}
			return ""
		}
		pass := `
        status: [429, 5xx]
        headers:
          Retry-After: {gte: 1, lte: 3}
          X-Flag: true
          X-Missing: {exists: false}
        json:
          error.code: -32029
          error.data.error: ${vars.code}
          error.data.retry_after_s: {gt: 2, lt: 4, in: [1, 3]}
          error.data.tags: {contains: b}
          error.data.msg: {matches: "client-[0-9]+", not_equals: x}
          n: null
          missing: {exists: false}
        body_contains: slow down
        max_latency: 2s
`
		if got := step(pass); got != "" {
			t.Errorf("every expectation holds, but the step failed: %s", got)
		}
		fail := `
        status: 2xx
        headers: {Retry-After: {gt: 5}}
        json:
          error.code: "-32029"
          error.data.tags: {contains: c}
          error.data.retry_after_s: {in: [1, 2]}
          n: {exists: true, equals: 0}
          missing: 1
        body_contains: [slow, fast]
        max_latency: 1s
`
		got := step(fail)
		for _, want := range []string{
			"response 429 in 1.5s: status: want 2xx, got 429",
			`json: error.code: want "-32029", got -32029`,
			`json: error.data.tags: want something containing "c", got ["a","b"]`,
			"json: error.data.retry_after_s: want one of [1,2], got 3",
			"json: n: want 0, got null",
			"json: missing: want 1, got nothing (absent)",
			"header Retry-After: want > 5, got 3",
			`body: want it to contain "fast"`,
			"latency: want at most 1s, took 1.5s",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("failure message lacks %q:\n%s", want, got)
			}
		}
	})
}

func TestHTTPStepRepeatAndOutputs(t *testing.T) {
	e := drilltest.NewEnv(t)
	calls := 0
	e.Deps.HTTP = drilltest.HandlerDoer{H: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("X-Call", fmt.Sprint(calls))
		if calls == 4 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, `{"result":{"n":%d,"items":[{"id":"a%d"}]}}`, calls, calls)
	})}
	out := t.TempDir() + "/out"
	e.Deps.LookupEnv = func(n string) (string, bool) { return out, n == "OUT" }
	d := drilltest.Parse(t, Builtin(), `
name: x
timeout: 1m
steps:
  - id: three
    http: {url: "http://h/", repeat: 3}
  - id: echo
    shell:
      run: echo "$ID $CALL $DRILL_STEP_THREE_STATUS" > "$OUT"; echo "$DRILL_STEP_THREE_STATUS" >> "$OUT"
      env: {ID: "${steps.three.json.result.items[0].id}", CALL: "${steps.three.header.x-call}", OUT: "${env.OUT}"}
  - id: two
    http: {url: "http://h/", repeat: 2}
`)
	steps, _ := e.Steps(context.Background(), e.RunContext(d))
	if s := steps[0]; s.Err != nil || s.Outputs.Public()["status"] != "200" || !strings.Contains(s.Outputs.Detail, "3 responses") {
		t.Errorf("three = %v %+v", s.Err, s.Outputs)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "a3 3 200\n200\n" {
		t.Errorf("outputs in the next step: %q %v", b, err)
	}
	if err := steps[2].Err; err == nil || !strings.Contains(err.Error(), "response 1 of 2: 503") {
		t.Errorf("two: %v", err)
	}
}

// A failed http step quotes the response body on one line with its
// controls shown: the message is kept in the journal and printed by drill
// report, and an ESC in a server's answer must not reach either raw.
func TestHTTPFailureShowsTheBodysControls(t *testing.T) {
	e := drilltest.NewEnv(t)
	e.Deps.HTTP = drilltest.HandlerDoer{H: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "<h1>down</h1>\r\n\x1b]0;pwned\x07\x1b[2J\n\tretry later")
	})}
	d := drilltest.Parse(t, Builtin(), `
name: x
timeout: 1m
steps:
  - http:
      url: "http://h/x"
      expect: {status: 200}
`)
	steps, _ := e.Steps(context.Background(), e.RunContext(d))
	if steps[0].Err == nil {
		t.Fatal("a 503 passed expect status 200")
	}
	got := steps[0].Err.Error()
	want := `body: <h1>down</h1>\r \x1b]0;pwned\x07\x1b[2J retry later`
	if !strings.Contains(got, want) {
		t.Errorf("failure = %q, want it to contain %q", got, want)
	}
	for _, c := range got {
		if c < 0x20 || c == 0x7f {
			t.Fatalf("failure holds the raw control %q: %q", c, got)
		}
	}
}
