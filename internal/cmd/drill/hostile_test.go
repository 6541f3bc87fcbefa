package drill_test

import (
	"context"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// Issue 12, "drill data becomes shell code": what a drill reads from the
// world (an HTTP answer, an override in the table, a --var) must never run
// as shell. Each test points a shell step's working directory at a fresh
// temporary directory and checks that no file appeared there.

// hostileServer answers every request with a body and a header written to
// break out of a double-quoted shell word.
func hostileServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Thing", "1$(touch pwned2)")
		_, _ = io.WriteString(w, `ok"; touch pwned; echo "`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// expectCode runs koshactl and reports (without stopping the test, so
// what the run did can still be checked) an exit code other than want.
func expectCode(t *testing.T, e *clitest.Env, want int, args ...string) clitest.Result {
	t.Helper()
	r := e.Run(args...)
	if r.Code != want {
		t.Errorf("koshactl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// noFiles fails the test when dir holds anything.
func noFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("drill input ran as shell code: %s was created", filepath.Join(dir, e.Name()))
	}
}

func TestValidateAndRunRefuseStepOutputsInAShellCommand(t *testing.T) {
	e := clitest.New(t)
	srv := hostileServer(t)
	work := t.TempDir()
	file := writeFile(t, "hostile.yaml", `
name: hostile
timeout: 1m
steps:
  - id: probe
    http: {url: "`+srv.URL+`/probe"}
  - id: echo
    shell:
      run: echo "service said ${steps.probe.body}"; echo "${steps.probe.header.x-thing}"
      dir: `+work+`
`)
	r := expectCode(t, e, exitcode.Usage, "drill", "validate", file)
	want := []string{
		file + `:8:31: shell: run: ${steps.probe.body}: a shell command takes no ${...} references (the value would become shell code): use "$DRILL_STEP_PROBE_BODY" from its environment`,
		file + `:8:59: shell: run: ${steps.probe.header.x-thing}: a shell command takes no ${...} references (the value would become shell code): pass it in the environment, env: {PROBE_HEADER_X_THING: "${steps.probe.header.x-thing}"}, and use "$PROBE_HEADER_X_THING"`,
		"2 problems found",
	}
	if got := strings.TrimSpace(r.Stderr); got != strings.Join(want, "\n") {
		t.Errorf("validate stderr:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	r = expectCode(t, e, exitcode.Usage, "drill", "run", file)
	if !strings.Contains(r.Stderr, `use "$DRILL_STEP_PROBE_BODY"`) {
		t.Errorf("run stderr = %s", r.Stderr)
	}
	noFiles(t, work)
}

// The way the refusal points to: the values reach the command as
// environment variables, and the command prints them as text.
func TestShellStepReadsHostileValuesFromItsEnvironmentAsText(t *testing.T) {
	e := clitest.New(t)
	srv := hostileServer(t)
	work := t.TempDir()
	file := writeFile(t, "env.yaml", `
name: hostile-env
timeout: 1m
steps:
  - id: probe
    http: {url: "`+srv.URL+`/probe"}
  - id: echo
    shell:
      run: echo "service said $DRILL_STEP_PROBE_BODY"; echo "$THING"
      env: {THING: "${steps.probe.header.x-thing}"}
      dir: `+work+`
`)
	e.MustRun(exitcode.OK, "drill", "validate", file)
	jpath := filepath.Join(t.TempDir(), "j.json")
	e.MustRun(exitcode.OK, "drill", "run", file, "--journal", jpath)
	j := readJournal(t, jpath)
	if got, want := j.Steps[1].Outputs["stdout"], "service said ok\"; touch pwned; echo \"\n1$(touch pwned2)"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	noFiles(t, work)
}

func TestValidateRefusesAStoreValueEchoedIntoAShellCommand(t *testing.T) {
	e := clitest.New(t)
	work := t.TempDir()
	// A hostile writer's override: the actor is shell code.
	force(t, e.Clock, levertest.Req{Dependency: "openai", Actor: "$(touch pwned3)", Reason: "someone else's", For: time.Hour})
	src := func(run, dir string) string {
		return `
name: hostile-store
timeout: 1m
steps:
  - id: chk
    assert: {breaker: {dependency: openai, state: forced_open, source: store}}
  - id: echo
    shell: {run: '` + run + `', dir: "` + dir + `"}
`
	}
	file := writeFile(t, "store.yaml", src(`echo "${steps.chk.detail}"`, work))
	r := expectCode(t, e, exitcode.Usage, "drill", "validate", file)
	if want := file + `:7:25: shell: run: ${steps.chk.detail}: a shell command takes no ${...} references (the value would become shell code): use "$DRILL_STEP_CHK_DETAIL" from its environment`; strings.TrimSpace(r.Stderr) != want+"\n1 problem found" {
		t.Errorf("validate stderr = %s\nwant %s", r.Stderr, want)
	}
	expectCode(t, e, exitcode.Usage, "drill", "run", file)
	noFiles(t, work)

	// Through the environment, the actor is printed, not run.
	work = t.TempDir()
	file = writeFile(t, "store-env.yaml", src(`echo "$DRILL_STEP_CHK_DETAIL"`, work))
	jpath := filepath.Join(t.TempDir(), "j.json")
	e.MustRun(exitcode.OK, "drill", "run", file, "--journal", jpath)
	if got := readJournal(t, jpath).Steps[1].Outputs["stdout"]; !strings.HasPrefix(got, "openai: forced open by $(touch pwned3) (") {
		t.Errorf("stdout = %q", got)
	}
	noFiles(t, work)
	if _, err := overrides(t, e.Clock).Get(context.Background(), "openai"); err != nil {
		t.Errorf("the drill touched someone else's override: %v", err)
	}
}

// A --var value comes from outside the file too: it reaches the command as
// DRILL_VAR_NAME, never as text of the command.
func TestRunVarFromTheCommandLineIsNotShellCode(t *testing.T) {
	e := clitest.New(t)
	work := t.TempDir()
	file := writeFile(t, "var.yaml", "name: v\ntimeout: 1m\nvars:\n  who: nobody\nsteps:\n  - shell: {run: 'echo \"$DRILL_VAR_WHO\"', dir: "+work+"}\n")
	jpath := filepath.Join(t.TempDir(), "j.json")
	e.MustRun(exitcode.OK, "drill", "run", file, "--var", "who=$(touch pwned4)", "--journal", jpath)
	if got := readJournal(t, jpath).Steps[0].Outputs["stdout"]; got != "$(touch pwned4)" {
		t.Errorf("stdout = %q", got)
	}
	noFiles(t, work)

	file = writeFile(t, "var-ref.yaml", "name: v\ntimeout: 1m\nvars:\n  who: nobody\nsteps:\n  - shell: {run: 'echo \"${vars.who}\"', dir: "+work+"}\n")
	r := expectCode(t, e, exitcode.Usage, "drill", "run", file, "--var", "who=$(touch pwned4)")
	if !strings.Contains(r.Stderr, `shell: run: ${vars.who}: a shell command takes no ${...} references (the value would become shell code): use "$DRILL_VAR_WHO" from its environment`) {
		t.Errorf("stderr = %s", r.Stderr)
	}
	noFiles(t, work)
}

// An answer cannot send the drill's request, with its headers, to another
// host: a redirect off the request's scheme and host is not followed, and
// the 3xx is the step's answer.
func TestRunDoesNotFollowARedirectToAnotherHost(t *testing.T) {
	e := clitest.New(t)
	var mu sync.Mutex
	var leaked []http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Clone())
		mu.Unlock()
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		if r.URL.Path == "/ok" {
			return
		}
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	file := writeFile(t, "redirect.yaml", `
name: redirect
timeout: 1m
vars:
  key: {value: key-0123456789, secret: true}
steps:
  - id: same
    http: {url: "`+srv.URL+`/same", headers: {X-Api-Key: "${vars.key}"}}
  - id: away
    http: {url: "`+srv.URL+`/away", headers: {X-Api-Key: "${vars.key}"}}
`)
	jpath := filepath.Join(t.TempDir(), "j.json")
	expectCode(t, e, exitcode.Error, "drill", "run", file, "--journal", jpath)
	j := readJournal(t, jpath)
	if s := j.Steps[0]; s.Status != "passed" {
		t.Errorf("a redirect on the same host should be followed: %+v", s)
	}
	if s := j.Steps[1]; s.Status != "failed" || !strings.Contains(s.Error, "status: want 2xx, got 302") {
		t.Errorf("away = %s %q", s.Status, s.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range leaked {
		t.Errorf("the request followed a redirect to another host, with X-Api-Key %q", h.Get("X-Api-Key"))
	}
}
