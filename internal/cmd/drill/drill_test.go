package drill_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

func TestExitCodesMatchTheDocumentedOnes(t *testing.T) {
	for name, pair := range map[string][2]int{
		"passed": {exitcode.OK, exitcode.OK}, "failed": {exitcode.Error, exitcode.Error},
		"invalid": {exitcode.Usage, exitcode.Usage}, "interrupted": {exitcode.Interrupted, exitcode.Interrupted},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: drill exits %d, koshactl documents %d", name, pair[0], pair[1])
		}
	}
	for _, c := range []int{exitcode.OK, exitcode.Error, exitcode.Usage, exitcode.NotFound, exitcode.Conflict,
		exitcode.Unavailable, exitcode.Auth, exitcode.Refused, exitcode.Unknown, exitcode.Interrupted} {
		if c == exitcode.Rollback {
			t.Errorf("exit code %d for a failed rollback collides with an existing code", c)
		}
	}
}

const malformed = `
name: flood
timeout: 30s
steps:
  - id: drain
    ratelimit.drain: {client: drill-client, for: 2 minutes}
  - id: check
    http:
      url: http://127.0.0.1:1/x?id=${steps.drain.nope}
      expect: {status: 429}
  - ratelimit.rest: {client: drill-client}
`

func TestValidatePrintsLineNumberedProblemsAndExits2(t *testing.T) {
	e := clitest.New(t)
	bad := writeFile(t, "flood.yaml", malformed)
	r := e.MustRun(exitcode.Usage, "drill", "validate", bad)
	want := []string{
		bad + `:5:50: ratelimit.drain: for: "2 minutes" is not a duration: write it with a unit, like 30s, 1m30s or 500ms`,
		bad + `:8:36: http: url: ${steps.drain.nope}: step "drain" (ratelimit.drain) has no output "nope"; it has client, tokens_before, tokens_after, admit, retry_after_seconds, changed`,
		bad + `:10:5: step "step-3": unknown step kind or field "ratelimit.rest"; step kinds are assert, breaker.clear, breaker.force-open, chaos.sign, http, ratelimit.drain, ratelimit.reset, ratelimit.set, shell, sleep, wait-for; fields are id, name, timeout, continue_on_failure, rollback (did you mean "ratelimit.reset"?)`,
		"3 problems found",
	}
	if got := strings.Split(strings.TrimSpace(r.Stderr), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.Stderr, strings.Join(want, "\n"))
	}
	if r.Stdout != "" {
		t.Errorf("stdout should be empty, got %q", r.Stdout)
	}
	// A file that does not exist is a problem too, and does not stop the others.
	good := writeFile(t, "good.yaml", "name: ok\ntimeout: 1m\nsteps:\n  - sleep: 1s\n")
	r = e.MustRun(exitcode.Usage, "drill", "validate", good, filepath.Join(t.TempDir(), "missing.yaml"), "-o", "json")
	var out struct {
		Kind  string `json:"kind"`
		OK    bool   `json:"ok"`
		Files []struct {
			File     string          `json:"file"`
			OK       bool            `json:"ok"`
			Steps    int             `json:"steps"`
			Problems []drill.Problem `json:"problems"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	if out.Kind != "DrillValidation" || out.OK || len(out.Files) != 2 || !out.Files[0].OK || out.Files[0].Steps != 1 ||
		out.Files[1].OK || !strings.Contains(out.Files[1].Problems[0].Message, "no such file") {
		t.Errorf("json = %+v", out)
	}
	r = e.MustRun(exitcode.OK, "drill", "validate", good)
	if !strings.Contains(r.Stdout, "good.yaml: ok (drill ok, 1 steps") {
		t.Errorf("stdout = %q", r.Stdout)
	}
}

func TestRunRefusesAnInvalidFileAndDoesNothing(t *testing.T) {
	e := clitest.New(t)
	bad := writeFile(t, "flood.yaml", malformed)
	r := e.MustRun(exitcode.Usage, "drill", "run", bad)
	if !strings.Contains(r.Stderr, ":5:50: ratelimit.drain: for:") || strings.Contains(r.Stderr, "error:") {
		t.Errorf("stderr = %s", r.Stderr)
	}
}

func outage(url string) string {
	return `
name: outage
context: local
timeout: 1m
poll_interval: 20ms
vars:
  fleet: ` + url + `
metrics_url: ${vars.fleet}/metrics
hypothesis:
  - name: search not degraded
    http: {url: "${vars.fleet}/search", expect: {json: {result.degraded: false}}}
steps:
  - id: force
    breaker.force-open: {dependency: openai, for: 5m}
  - id: forced
    wait-for:
      breaker: {dependency: openai, state: forced_open}
      timeout: 10s
  - id: degraded
    http: {url: "${vars.fleet}/search", expect: {json: {result.degraded: true}}}
`
}

func TestRunPassesWritesReportsAndLeavesNothingBehind(t *testing.T) {
	e := clitest.New(t)
	fl := newFleet(t, e.Clock)
	file := writeFile(t, "outage.yaml", outage(fl.srv.URL))
	dir := t.TempDir()
	jpath, xpath := filepath.Join(dir, "journal.json"), filepath.Join(dir, "junit.xml")
	mdpath := filepath.Join(dir, "summary.md")
	r := e.Run("drill", "run", file, "--journal", jpath, "--junit", xpath, "--report", mdpath)
	if r.Code != exitcode.OK {
		t.Fatalf("exit %d\nstdout:%s\nstderr:%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := overrides(t, e.Clock).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("override left behind: %v", err)
	}
	if !strings.HasPrefix(r.Stdout, "PASSED in") || !strings.Contains(r.Stdout, "3/3 steps passed; 1/1 rollbacks ok (exit 0)") {
		t.Errorf("stdout = %q", r.Stdout)
	}
	for _, want := range []string{"2026-11-29T19:00:00.000Z drill outage: run", `context "local" (sqlite`, "[2/3] forced (wait-for)", "ok   rb-1 breaker#openai: cleared"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("live log lacks %q:\n%s", want, r.Stderr)
		}
	}
	j := readJournal(t, jpath)
	if j.Outcome != drill.OutcomePassed || j.ExitCode != 0 || j.Context != "local" || j.Actor != "tester@test" || len(j.Rollbacks) != 1 ||
		j.Gauges != "prometheus "+fl.srv.URL+"/metrics" {
		t.Errorf("journal = %+v", j)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b := []byte(readFile(t, xpath))
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatalf("JUnit report is not XML: %v", err)
	}
	// 1 check before + 3 steps + 1 rollback + 1 check after.
	if suites.Tests != 6 || suites.Failures != 0 || len(suites.Suites[0].Cases) != 6 ||
		suites.Suites[0].Cases[4].Classname != "drill.outage.rollback" {
		t.Errorf("junit = %+v\n%s", suites, b)
	}
	recs := e.MustRun(0, "audit", "list", "-o", "json").Stdout
	if strings.Count(recs, `"action": "breaker.force-open"`) != 1 || strings.Count(recs, `"action": "breaker.clear"`) != 1 {
		t.Errorf("audit:\n%s", recs)
	}
	// --report with a .md name: the Markdown summary of the run.
	if md := readFile(t, mdpath); !strings.HasPrefix(md, "## ✅ drill outage: PASSED (exit 0)") || !strings.Contains(md, "| **Put back** | all 1 by ") {
		t.Errorf("report:\n%s", md)
	}
}

func TestRunFailingDrillExits1AfterRollingBack(t *testing.T) {
	e := clitest.New(t)
	fl := newFleet(t, e.Clock)
	file := writeFile(t, "fail.yaml", strings.Replace(outage(fl.srv.URL), "result.degraded: true", "result.degraded: 42", 1))
	r := e.Run("drill", "run", file, "-o", "json")
	if r.Code != exitcode.Error {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	var j drill.Journal
	if err := json.Unmarshal([]byte(r.Stdout), &j); err != nil {
		t.Fatalf("-o json is not the journal: %v\n%s", err, r.Stdout)
	}
	if j.Kind != "DrillRun" || j.Outcome != drill.OutcomeFailed || !j.RollbacksOK || !strings.Contains(j.Reason, "want 42, got true") {
		t.Errorf("journal = %+v", j)
	}
	if _, err := overrides(t, e.Clock).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("override left behind after a failed drill: %v", err)
	}
}

func TestRunContextSelection(t *testing.T) {
	e := clitest.New(t)
	dir := t.TempDir()
	e.WriteConfig(`
contexts:
  prod:
    store: {local: {path: ` + filepath.Join(dir, "prod.db") + `}}
    protected: true
  dev:
    store: {local: {path: ` + filepath.Join(dir, "dev.db") + `}}
`)
	prod := writeFile(t, "prod.yaml", "name: p\ncontext: prod\ntimeout: 1m\nsteps:\n  - breaker.force-open: {dependency: openai}\n")
	r := e.MustRun(exitcode.Refused, "drill", "run", prod)
	if !strings.Contains(r.Stderr, `context "prod" is protected: the drill does not say allow_protected: true`) {
		t.Errorf("stderr = %s", r.Stderr)
	}
	r = e.MustRun(exitcode.Refused, "drill", "run", prod, "--allow-protected")
	if !strings.Contains(r.Stderr, "--allow-protected was given, but the drill does not say allow_protected: true") {
		t.Errorf("stderr = %s", r.Stderr)
	}
	allowed := writeFile(t, "prod.yaml", "name: p\ncontext: prod\nallow_protected: true\ntimeout: 1m\nsteps:\n  - breaker.force-open: {dependency: openai}\n")
	r = e.MustRun(exitcode.Refused, "drill", "run", allowed)
	if !strings.Contains(r.Stderr, "pass --allow-protected") {
		t.Errorf("stderr = %s", r.Stderr)
	}
	r = e.MustRun(exitcode.OK, "drill", "run", allowed, "--allow-protected")
	if !strings.Contains(r.Stderr, `on context "prod"`) {
		t.Errorf("the drill did not run on prod: %s", r.Stderr)
	}
	r = e.MustRun(exitcode.Usage, "drill", "run", allowed, "--allow-protected", "--context", "dev")
	if !strings.Contains(r.Stderr, `drill p is written for context "prod", but --context (or $KOSHACTL_CONTEXT) selects "dev"`) {
		t.Errorf("stderr = %s", r.Stderr)
	}
	// A drill without a context runs on the selected one.
	anyDrill := writeFile(t, "any.yaml", "name: a\ntimeout: 1m\nsteps:\n  - breaker.force-open: {dependency: openai}\n")
	r = e.MustRun(exitcode.OK, "drill", "run", anyDrill, "--context", "dev")
	if !strings.Contains(r.Stderr, `on context "dev"`) {
		t.Errorf("stderr = %s", r.Stderr)
	}
}

func TestRunVarsFromTheCommandLine(t *testing.T) {
	e := clitest.New(t)
	out := filepath.Join(t.TempDir(), "out")
	file := writeFile(t, "vars.yaml", "name: v\ntimeout: 1m\nvars:\n  who: nobody\nsteps:\n  - shell: echo \"$DRILL_VAR_WHO\" > "+out+"\n")
	e.MustRun(exitcode.OK, "drill", "run", file, "--var", "who=somebody")
	if b := readFile(t, out); strings.TrimSpace(b) != "somebody" {
		t.Errorf("--var did not override: %q", b)
	}
	r := e.MustRun(exitcode.Usage, "drill", "run", file, "--var", "what=x")
	if !strings.Contains(r.Stderr, "drill v has no such variable (it has who)") {
		t.Errorf("stderr = %s", r.Stderr)
	}
	e.MustRun(exitcode.Usage, "drill", "run", file, "--var", "novalue")
}

func TestRunRefusesAReportItCannotWrite(t *testing.T) {
	e := clitest.New(t)
	out := filepath.Join(t.TempDir(), "out")
	file := writeFile(t, "r.yaml", "name: r\ntimeout: 1m\nsteps:\n  - shell: touch "+out+"\n")
	r := e.MustRun(exitcode.Usage, "drill", "run", file, "--journal", filepath.Join(t.TempDir(), "no", "such", "dir", "j.json"))
	if !strings.Contains(r.Stderr, "cannot write there: no such file or directory; nothing was run") {
		t.Errorf("stderr = %s", r.Stderr)
	}
	e.MustRun(exitcode.Usage, "drill", "run", file, "--junit", t.TempDir())
	if r := e.MustRun(exitcode.Usage, "drill", "run", file, "--report", t.TempDir()); !strings.Contains(r.Stderr, "--report ") {
		t.Errorf("stderr = %s", r.Stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the drill ran although its report could not be written")
	}
}

// Signals arrive on Options.Signals; the first interrupts the run, the
// rollbacks still run, and the exit code is 130.
func TestRunInterruptedBySignalRollsBack(t *testing.T) {
	clitest.New(t)
	ios, _, _, errOut := iostreams.Test()
	f := factory.NewWith(ios, nil)
	f.Clock = clockReal{}
	file := writeFile(t, "int.yaml", "name: i\ntimeout: 10m\nsteps:\n  - breaker.force-open: {dependency: openai}\n  - id: wait\n    sleep: 5m\n")
	sigs := make(chan os.Signal, 3)
	jpath := filepath.Join(t.TempDir(), "j.json")
	done := make(chan error, 1)
	go func() {
		done <- run.Run(context.Background(), f, &run.Options{File: file, Signals: sigs, Journal: jpath, Output: "table"})
	}()
	wait.Until(t, "the sleep step to run, the first one passed", func() bool {
		j, err := tryJournal(jpath)
		// Signal once the sleep step is under way: a signal between the two
		// steps would (rightly) leave the second one skipped, not interrupted.
		return err == nil && len(j.Steps) == 2 && j.Steps[0].Status == drill.StatusPassed && j.Steps[1].Status == drill.StatusRunning
	})
	sigs <- syscall.SIGINT
	err := <-done
	if code := exitcode.Of(err); code != exitcode.Interrupted {
		t.Fatalf("exit %d (%v)\n%s", code, err, errOut)
	}
	j := readJournal(t, jpath)
	if j.Outcome != drill.OutcomeInterrupted || !j.RollbacksOK || j.Rollbacks[0].Status != drill.StatusOK || j.Steps[1].Status != drill.StatusInterrupted {
		t.Errorf("journal = %+v", j)
	}
	if !strings.Contains(errOut.String(), "received SIGINT: stopping the steps and rolling back") {
		t.Errorf("live log:\n%s", errOut)
	}
	if _, err := overrides(t, clockReal{}).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("override left behind: %v", err)
	}
}

func TestKindsListsEveryKind(t *testing.T) {
	e := clitest.New(t)
	out := e.MustRun(exitcode.OK, "drill", "kinds").Stdout
	for _, want := range []string{"breaker.force-open  auto", "wait-for            -", "CONDITION KIND", "bucket"} {
		if !strings.Contains(out, want) {
			t.Errorf("kinds lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		Kind  string `json:"kind"`
		Steps []struct {
			Name     string   `json:"name"`
			Outputs  []string `json:"outputs"`
			Mutating bool     `json:"mutating"`
		} `json:"steps"`
		Conditions []struct{ Name string } `json:"conditions"`
	}
	if err := json.Unmarshal([]byte(e.MustRun(exitcode.OK, "drill", "kinds", "-o", "json").Stdout), &doc); err != nil {
		t.Fatal(err)
	}
	mutating := 0
	for _, s := range doc.Steps {
		if s.Mutating {
			mutating++
		}
	}
	if doc.Kind != "DrillKinds" || len(doc.Steps) != 11 || mutating != 6 || len(doc.Conditions) != 5 {
		t.Errorf("kinds = %+v", doc)
	}
}

// A rollback that fails makes the run exit 9 and says which lever was left.
func TestRunExits9WhenARollbackFails(t *testing.T) {
	e := clitest.New(t)
	file := writeFile(t, "rb.yaml", `
name: rb
timeout: 1m
rollback_timeout: 1m
steps:
  - id: force
    breaker.force-open: {dependency: openai}
rollback:
  - name: a cleanup that cannot work
    shell: echo cannot >&2; exit 4
`)
	r := e.Run("drill", "run", file)
	if r.Code != exitcode.Rollback {
		t.Fatalf("exit %d, want %d\n%s%s", r.Code, exitcode.Rollback, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "NOT RESTORED: shell (failed, step drill): command failed: exit code 4, want 0: cannot; it does not lapse on its own: restore it by hand") {
		t.Errorf("stdout = %s", r.Stdout)
	}
	// The override's own rollback still ran (the failing one runs last).
	if _, err := overrides(t, e.Clock).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("override left behind: %v", err)
	}
}

// Interrupted, with a rollback that fails: the run's error carries exit 9,
// not 130, so scripts learn that a lever was left.
func TestInterruptedRunWithAFailedRollbackCarriesExit9(t *testing.T) {
	clitest.New(t)
	ios, _, _, errOut := iostreams.Test()
	f := factory.NewWith(ios, clockReal{})
	file := writeFile(t, "int.yaml", `
name: i
timeout: 10m
rollback_timeout: 1m
steps:
  - id: wait
    sleep: 5m
    rollback: {shell: "exit 1"}
`)
	sigs := make(chan os.Signal, 1)
	jpath := filepath.Join(t.TempDir(), "j.json")
	done := make(chan error, 1)
	go func() {
		done <- run.Run(context.Background(), f, &run.Options{File: file, Signals: sigs, Journal: jpath, Output: "table"})
	}()
	wait.Until(t, "the drill's one step to run", func() bool {
		j, err := tryJournal(jpath)
		return err == nil && len(j.Steps) == 1 && j.Steps[0].Status == drill.StatusRunning
	})
	sigs <- syscall.SIGTERM
	err := <-done
	if code := exitcode.Of(err); code != exitcode.Rollback {
		t.Fatalf("exit %d (%v)\n%s", code, err, errOut)
	}
	if !strings.Contains(errOut.String(), "received SIGTERM") {
		t.Errorf("live log:\n%s", errOut)
	}
}

// A hand-edited context with limits no bucket can run with is refused before
// anything runs, with the same fix koshactl ratelimit names (one constructor,
// ratelimit.NewLimits, for every command that builds the context's limits).
func TestRunRefusesTheContextsInvalidLimitsNamingTheFix(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("contexts:\n  small:\n    store:\n      local: {}\n    ratelimit:\n      capacity: 0.5\ncurrent-context: small\n")
	d := writeFile(t, "d.yaml", "name: a\ntimeout: 1m\nsteps:\n  - breaker.force-open: {dependency: openai}\n")
	for _, verb := range []string{"run", "plan"} {
		r := e.MustRun(exitcode.Usage, "drill", verb, d)
		if !strings.Contains(r.Stderr, `context "small"`) || !strings.Contains(r.Stderr, "--ratelimit-capacity N") {
			t.Errorf("drill %s with capacity 0.5: stderr %q; want the context and the set-context fix", verb, r.Stderr)
		}
	}
}
