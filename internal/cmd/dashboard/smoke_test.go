//go:build linux

// The smoke test is Linux-only: CI and `make test-deps` (which installs tmux
// from Debian) are Linux, and the sandbox is tied to the test process with
// Pdeathsig, which only Linux has.

package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// The smoke test's budgets. Each wait polls and returns as soon as the
// screen shows what it waits for (a second or two); the deadlines only bound
// a failing run on a loaded machine.
const (
	smokeDeadline = wait.Ceiling
	smokePoll     = 50 * time.Millisecond
	// smokeLifetime bounds a dashboard left behind by a test binary that died
	// before its cleanups ran (a go test -timeout panic): tmux outlives it.
	smokeLifetime = 5 * time.Minute
	// smokeInstances is the sandbox's fleet size, so "3/3" on screen means
	// every instance of this fleet reports.
	smokeInstances = 3
)

// TestSmokeDashboardInTmux runs the real binary the way an operator does: a
// sandbox fleet on the local context, the dashboard in a terminal (a private
// tmux server), keys typed into it. It forces openai open from the keyboard,
// waits for every instance to report forced, checks breaker status agrees,
// clears, waits for closed, and quits with exit 0; then it does the same on
// a protected context, where the change waits for the context's name typed
// in full.
//
// It needs tmux: `make test` installs it (make test-deps).
func TestSmokeDashboardInTmux(t *testing.T) {
	t.Parallel()
	s := newSmoke(t)
	s.startSandbox(t)

	if !t.Run("force-open and clear on the local context", s.localContext) {
		return
	}
	if !t.Run("typed confirmation on a protected context", s.protectedContext) {
		return
	}

	// Every change is on the record, under the actor and the context it was
	// made in, and the refused confirmation changed nothing.
	var list struct {
		Items []struct {
			Actor   string `json:"actor"`
			Action  string `json:"action"`
			Reason  string `json:"reason"`
			Context string `json:"context"`
			Outcome string `json:"outcome"`
		} `json:"items"`
	}
	s.runJSON(t, 0, &list, "audit", "list", "--subject", "breaker#openai", "-o", "json")
	var got []string
	for _, r := range list.Items {
		if r.Actor != "smoke@ci" || r.Outcome != "ok" {
			t.Errorf("audit record %+v: want actor smoke@ci, outcome ok", r)
		}
		got = append(got, r.Context+" "+r.Action+" "+r.Reason)
	}
	want := []string{ // newest first
		"guarded breaker.clear ",
		"guarded breaker.force-open " + guardedReason,
		"local breaker.clear " + clearReason,
		"local breaker.force-open " + forceReason,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records of openai:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	s.stopSandbox(t)
}

const (
	// Short enough for the table's override cell at 100 columns.
	forceReason   = "INC-7 outage"
	clearReason   = "INC-7 provider back"
	guardedReason = "INC-7 guarded drill"
)

// localContext is the smoke test: force-open from the TUI, see the
// state change on every instance, clear.
func (s *smoke) localContext(t *testing.T) {
	d := s.dashboard(t, "local", "dashboard", "--metrics-url", s.url+"/metrics", "--interval", "1s")
	d.waitRow(t, "openai", "closed", "closed", "closed")
	d.waitFor(t, `the local context in the title`, contains("koshactl dashboard · context local"))

	d.typeText(t, "/openai")
	d.press(t, "Enter")
	d.waitFor(t, "the table filtered to openai", func(screen string) bool {
		r, ok := findRow(screen, "openai")
		_, other := findRow(screen, "core-api")
		return ok && r.selected && !other && strings.Contains(screen, "filter: openai (1 of 4)")
	})

	d.typeText(t, "f")
	d.waitFor(t, "the force-open prompt", contains("Force openai open across the fleet · context local", "Reason:"))
	d.typeText(t, forceReason)
	d.press(t, "Enter")
	d.waitFor(t, "the duration step, 1h by default", contains("Reason:   "+forceReason, "Duration: 1h", "enter: FORCE OPEN"))
	d.press(t, "Enter")
	d.waitFor(t, "the force-open confirmation", orConfirmed("openai", matches(`openai forced open for (59m|1h) — reason: `+regexp.QuoteMeta(forceReason))))
	r := d.waitRow(t, "openai", "forced", "forced", "forced")
	if !strings.Contains(r.line, "smoke "+forceReason) {
		t.Errorf("the openai row does not show who forced it and why:\n%s", r.line)
	}

	// breaker status (what scripts and CI read) agrees with the screen.
	st := s.status(t, 0, "openai")
	if st.State != "forced_open" || st.GaugeState != "forced_open" || st.Gauges.InstancesReporting != smokeInstances ||
		st.Gauges.ByState["forced_open"] != smokeInstances {
		t.Errorf("breaker status openai: state %s, gauges %s, %d reporting, by state %v; want forced_open on all %d",
			st.State, st.GaugeState, st.Gauges.InstancesReporting, st.Gauges.ByState, smokeInstances)
	}
	if o := st.Override; o == nil || !o.Active || o.Actor != "smoke@ci" || o.Reason != forceReason {
		t.Errorf("breaker status openai: override %+v, want active, by smoke@ci, reason %q", o, forceReason)
	}

	d.typeText(t, "c")
	d.waitFor(t, "the clear prompt", contains("Clear the active override of openai · context local",
		"Set by smoke@ci", forceReason, "Reason (optional):", "enter: CLEAR"))
	d.typeText(t, clearReason)
	d.press(t, "Enter")
	d.waitFor(t, "the clear confirmation", orConfirmed("openai", contains("openai cleared: instances follow their own breakers again")))
	r = d.waitRow(t, "openai", "closed", "closed", "closed")
	if strings.Contains(r.line, "smoke") {
		t.Errorf("the openai row still shows the override after the clear:\n%s", r.line)
	}
	st = s.status(t, 0, "openai", "--check")
	if st.State != "closed" || st.Override != nil {
		t.Errorf("breaker status openai after the clear: state %s, override %+v; want closed, none", st.State, st.Override)
	}

	d.typeText(t, "q")
	d.waitExit(t, 0)
}

// protectedContext drives the same change on a protected context: the prompt
// asks for the context's name, refuses another, and only then acts.
func (s *smoke) protectedContext(t *testing.T) {
	s.run(t, 0, "config", "set-context", "guarded", "--local", filepath.Join(s.dir, "state", "local.db"),
		"--protected", "--prometheus-url", s.url+"/metrics")
	d := s.dashboard(t, "guarded", "--context", "guarded", "dashboard", "--interval", "1s")
	d.waitFor(t, "the protected banner", contains("PROTECTED CONTEXT guarded"))
	d.waitRow(t, "openai", "closed", "closed", "closed")

	d.typeText(t, "/openai")
	d.press(t, "Enter")
	d.waitFor(t, "the table filtered to openai", contains("filter: openai (1 of 4)"))
	d.typeText(t, "f")
	d.waitFor(t, "the force-open prompt", contains("Force openai open across the fleet · context guarded"))
	d.typeText(t, guardedReason)
	d.press(t, "Enter")
	d.waitFor(t, "the duration step", contains("Duration: 1h", "enter: next"))
	d.press(t, "C-u") // the field holds the default: replace it
	d.typeText(t, "20m")
	d.press(t, "Enter")
	d.waitFor(t, "the typed confirmation", contains(`PROTECTED context: type "guarded" to confirm:`, "Duration: 20m", "enter: FORCE OPEN"))
	d.typeText(t, "local")
	d.press(t, "Enter")
	d.waitFor(t, "the refusal of another name", contains(`that is not "guarded": type the context name exactly`))
	d.press(t, "C-u")
	d.typeText(t, "guarded")
	d.press(t, "Enter")
	d.waitFor(t, "the force-open confirmation", orConfirmed("openai", matches(`openai forced open for (19|20)m — reason: `+regexp.QuoteMeta(guardedReason))))
	d.waitRow(t, "openai", "forced", "forced", "forced")

	d.typeText(t, "c")
	d.waitFor(t, "the clear prompt", contains("Clear the active override of openai · context guarded"))
	d.press(t, "Enter") // no reason: it is optional
	d.waitFor(t, "the typed confirmation", contains(`PROTECTED context: type "guarded" to confirm:`, "enter: CLEAR"))
	d.typeText(t, "guarded")
	d.press(t, "Enter")
	d.waitFor(t, "the clear confirmation", orConfirmed("openai", contains("openai cleared")))
	d.waitRow(t, "openai", "closed", "closed", "closed")

	d.typeText(t, "q")
	d.waitExit(t, 0)
}

// smoke is one isolated installation of the built binary: its environment,
// its sandbox and its private tmux server.
type smoke struct {
	bin, tmux string
	tmuxConf  string
	dir       string
	env       []string
	socket    string
	url       string

	sandbox *exec.Cmd
	exited  chan struct{} // closed when the sandbox process ended
	waitErr error
}

func newSmoke(t *testing.T) *smoke {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("the dashboard smoke test drives the dashboard in tmux, which is not installed: run `make test` (its test-deps target installs tmux), or install tmux")
	}
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Fatal("the dashboard smoke test needs timeout (coreutils) to bound the dashboards it leaves to tmux")
	}
	conf, err := filepath.Abs(filepath.Join("testdata", "smoke.tmux.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &smoke{tmux: tmux, tmuxConf: conf, dir: dir,
		// A private server whose socket goes with the temporary directory
		// (tmux leaves it behind when the server exits).
		socket: filepath.Join(dir, "tmux.sock")}

	// make test's race-instrumented binary (a data race in the real binary
	// fails the test, exit 66), or one built for this test.
	s.bin = koshabin.Path(t)

	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// Nothing of the caller's koshactl, AWS, tmux session or terminal leaks in.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "KOSHACTL_"), strings.HasPrefix(k, "AWS_"), strings.HasPrefix(k, "XDG_"),
			k == "TMUX", k == "TMUX_PANE", k == "HOME", k == "NO_COLOR", k == "TERM", k == "SHELL":
			continue
		}
		s.env = append(s.env, kv)
	}
	s.env = append(s.env, "HOME="+home, "SHELL=/bin/sh", "TERM=xterm-256color", "NO_COLOR=1",
		"KOSHACTL_CONFIG="+filepath.Join(dir, "config.yaml"), "KOSHACTL_STATE_DIR="+filepath.Join(dir, "state"),
		"KOSHACTL_ACTOR=smoke@ci")
	t.Cleanup(func() {
		// Ends the server and every dashboard still running (their panes
		// hang up). It fails only when no server started.
		_, _ = s.tmuxCmd("kill-server")
	})
	return s
}

// startSandbox starts the fleet on a free port, 20 times faster than the
// LLD's time (the override cache is 250 ms), and waits until it serves.
func (s *smoke) startSandbox(t *testing.T) {
	t.Helper()
	addrFile := filepath.Join(s.dir, "sandbox.url")
	logPath := filepath.Join(s.dir, "sandbox.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	// t.Context ends when the test does: a sandbox still running then is killed.
	cmd := exec.CommandContext(t.Context(), s.bin, "sandbox", "--listen", "127.0.0.1:0", "--addr-file", addrFile, //nolint:gosec // G204: the binary this test built
		"--instances", fmt.Sprint(smokeInstances), "--time-scale", "20")
	cmd.Env, cmd.Stdout, cmd.Stderr = s.env, logFile, logFile
	// Its own process group, killed with the test binary if that dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.sandbox, s.exited = cmd, make(chan struct{})
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	})
	sandboxLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }

	ctx, cancel := context.WithTimeout(context.Background(), smokeDeadline)
	defer cancel()
	ticker := time.NewTicker(smokePoll)
	defer ticker.Stop()
	last := "no address file yet"
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			s.url = string(bytes.TrimSpace(b))
			if last = healthz(ctx, s.url); last == "" {
				return
			}
		}
		select {
		case <-s.exited:
			t.Fatalf("the sandbox exited before serving (%v):\n%s", s.waitErr, sandboxLog())
		case <-ctx.Done():
			t.Fatalf("the sandbox did not serve within %s (%s):\n%s", smokeDeadline, last, sandboxLog())
		case <-ticker.C:
		}
	}
}

// healthz returns "" when the sandbox answers GET /healthz with 200, or why not.
func healthz(ctx context.Context, url string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "healthz: " + resp.Status
	}
	return ""
}

// stopSandbox stops the fleet as Ctrl-C would and checks it stops cleanly.
func (s *smoke) stopSandbox(t *testing.T) {
	t.Helper()
	if err := s.sandbox.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(smokeDeadline):
		t.Fatalf("the sandbox did not stop within %s of SIGTERM", smokeDeadline)
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "sandbox.log"))
	if s.waitErr != nil || !bytes.Contains(log, []byte("koshactl sandbox: stopped after")) {
		t.Errorf("the sandbox did not stop cleanly on SIGTERM (%v):\n%s", s.waitErr, log)
	}
}

// run runs the binary and fails unless it exits with code.
func (s *smoke) run(t *testing.T, code int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), smokeDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...) //nolint:gosec // G204: the binary this test built
	cmd.Env = s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if got != code {
		t.Fatalf("koshactl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, &stdout, &stderr)
	}
	return stdout.String()
}

func (s *smoke) runJSON(t *testing.T, code int, v any, args ...string) {
	t.Helper()
	out := s.run(t, code, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("koshactl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// depStatus is the part of breaker status -o json the smoke test reads.
type depStatus struct {
	Dependency string `json:"dependency"`
	State      string `json:"state"`
	GaugeState string `json:"gauge_state"`
	Override   *struct {
		Active bool   `json:"active"`
		Actor  string `json:"actor"`
		Reason string `json:"reason"`
	} `json:"override"`
	Gauges struct {
		InstancesReporting int            `json:"instances_reporting"`
		ByState            map[string]int `json:"by_state"`
	} `json:"gauges"`
}

// status runs breaker status for one dependency against the sandbox.
func (s *smoke) status(t *testing.T, code int, dep string, flags ...string) depStatus {
	t.Helper()
	var res struct {
		Dependencies []depStatus `json:"dependencies"`
	}
	args := append([]string{"breaker", "status", dep, "--metrics-url", s.url + "/metrics", "-o", "json"}, flags...)
	s.runJSON(t, code, &res, args...)
	if len(res.Dependencies) != 1 || res.Dependencies[0].Dependency != dep {
		t.Fatalf("koshactl %s: want exactly %s, got %+v", strings.Join(args, " "), dep, res.Dependencies)
	}
	return res.Dependencies[0]
}

// tmuxCmd runs one tmux command on the test's server.
func (s *smoke) tmuxCmd(args ...string) (string, error) {
	// Not t.Context: the cleanup that kills the server runs after it ended.
	ctx, cancel := context.WithTimeout(context.Background(), smokeDeadline)
	defer cancel()
	// The test's configuration instead of the caller's; tmux reads it when
	// the first command starts the server.
	cmd := exec.CommandContext(ctx, s.tmux, append([]string{"-S", s.socket, "-f", s.tmuxConf}, args...)...) //nolint:gosec // G204: tmux from PATH, arguments from this test
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// dash is one dashboard running in its own tmux session.
type dash struct {
	s                 *smoke
	session           string
	exitFile, errFile string
}

// dashboard starts koshactl with args in a new 100x30 tmux session. The
// shell records the exit code in a file; stderr goes to another so a failure
// message survives the end of the session.
func (s *smoke) dashboard(t *testing.T, session string, args ...string) *dash {
	t.Helper()
	d := &dash{s: s, session: session,
		exitFile: filepath.Join(s.dir, session+".exit"), errFile: filepath.Join(s.dir, session+".stderr")}
	line := []string{"timeout", "--foreground", "-s", "KILL", fmt.Sprint(int(smokeLifetime.Seconds())), shellQuote(s.bin)}
	for _, a := range args {
		line = append(line, shellQuote(a))
	}
	script := fmt.Sprintf("exec 2>%s; %s; echo $? >%s", shellQuote(d.errFile), strings.Join(line, " "), shellQuote(d.exitFile))
	if _, err := s.tmuxCmd("new-session", "-d", "-s", session, "-x", "100", "-y", "30", script); err != nil {
		t.Fatal(err)
	}
	return d
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (d *dash) screen() string {
	out, err := d.s.tmuxCmd("capture-pane", "-p", "-t", d.session)
	if err != nil {
		return err.Error()
	}
	return out
}

// exit returns the dashboard's exit code as the shell wrote it, and whether
// it has exited.
func (d *dash) exit() (string, bool) {
	b, err := os.ReadFile(d.exitFile)
	code := strings.TrimSpace(string(b))
	return code, err == nil && code != ""
}

func (d *dash) stderr() string {
	b, _ := os.ReadFile(d.errFile)
	return string(b)
}

// waitFor polls the screen until ok accepts it, and fails with the last
// screen at the deadline or as soon as the dashboard exits.
func (d *dash) waitFor(t *testing.T, what string, ok func(screen string) bool) string {
	t.Helper()
	start := time.Now()
	deadline := time.NewTimer(smokeDeadline)
	defer deadline.Stop()
	ticker := time.NewTicker(smokePoll)
	defer ticker.Stop()
	for {
		screen := d.screen()
		if ok(screen) {
			if waited := time.Since(start); waited > 5*time.Second {
				t.Logf("waited %s for %s", waited.Round(time.Millisecond), what)
			}
			return screen
		}
		if code, done := d.exit(); done {
			t.Fatalf("the dashboard exited (%s) before showing %s; last screen:\n%s\nstderr:\n%s", code, what, compact(screen), d.stderr())
		}
		select {
		case <-deadline.C:
			// The wall clock tells a frozen screen from stale data (compare
			// the screen's clock); the sandbox's gauges tell stale data from
			// a fleet that did not move; a full repaint tells a terminal left
			// out of date from a model that is.
			t.Fatalf("the dashboard did not show %s within %s; last screen at %s:\n%s\nstderr:\n%s\nthe sandbox's gauges now:\n%s\n%s",
				what, smokeDeadline, time.Now().UTC().Format("15:04:05Z"), compact(screen), d.stderr(), d.s.gauges(), d.repaint(ok))
		case <-ticker.C:
		}
	}
}

// repaint makes the dashboard redraw every cell (a resize does) and says
// whether the screen then shows what ok waits for (for failure messages).
func (d *dash) repaint(ok func(screen string) bool) string {
	if _, err := d.s.tmuxCmd("resize-window", "-t", d.session, "-x", "99", "-y", "30"); err != nil {
		return "no repaint: " + err.Error()
	}
	var screen string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if screen = d.screen(); ok(screen) {
			return "after a full repaint (resized to 99 columns) the screen DOES show it, so the terminal was left out of date:\n" + compact(screen)
		}
		<-time.After(smokePoll)
	}
	return "after a full repaint (resized to 99 columns) the screen still does not show it:\n" + compact(screen)
}

// gauges returns the sandbox's breaker_state lines (for failure messages).
func (s *smoke) gauges() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/metrics", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "kosha_breaker_state{") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// waitRow waits until dep's row reads state, worst and best, with every
// instance of the fleet reporting, and returns it.
func (d *dash) waitRow(t *testing.T, dep, state, worst, best string) tableRow {
	t.Helper()
	inst := fmt.Sprintf("%d/%d", smokeInstances, smokeInstances)
	screen := d.waitFor(t, fmt.Sprintf("%s as %s (worst %s, best %s, %s instances)", dep, state, worst, best, inst),
		func(screen string) bool {
			r, ok := findRow(screen, dep)
			return ok && r.state == state && r.worst == worst && r.best == best && r.inst == inst
		})
	r, _ := findRow(screen, dep)
	return r
}

// typeText types text literally (no key names).
func (d *dash) typeText(t *testing.T, text string) {
	t.Helper()
	if _, err := d.s.tmuxCmd("send-keys", "-t", d.session, "-l", text); err != nil {
		t.Fatal(err)
	}
}

// press presses a key by its tmux name (Enter, C-u).
func (d *dash) press(t *testing.T, key string) {
	t.Helper()
	if _, err := d.s.tmuxCmd("send-keys", "-t", d.session, key); err != nil {
		t.Fatal(err)
	}
}

// waitExit waits for the dashboard to end and checks its exit code and that
// it wrote nothing on stderr.
func (d *dash) waitExit(t *testing.T, code int) {
	t.Helper()
	deadline := time.NewTimer(smokeDeadline)
	defer deadline.Stop()
	ticker := time.NewTicker(smokePoll)
	defer ticker.Stop()
	for {
		if got, done := d.exit(); done {
			if got != fmt.Sprint(code) {
				t.Errorf("the dashboard exited %s, want %d; stderr:\n%s", got, code, d.stderr())
			} else if e := d.stderr(); e != "" {
				t.Errorf("the dashboard wrote on stderr:\n%s", e)
			}
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("the dashboard did not exit within %s; last screen:\n%s", smokeDeadline, compact(d.screen()))
		case <-ticker.C:
		}
	}
}

// tableRow is one dependency's row as the screen shows it.
type tableRow struct {
	line                     string
	selected                 bool
	state, worst, best, inst string
}

// findRow finds dep's row in the table on screen.
func findRow(screen, dep string) (tableRow, bool) {
	for _, line := range strings.Split(screen, "\n") {
		rest, selected := strings.CutPrefix(line, "› ")
		if !selected {
			var ok bool
			if rest, ok = strings.CutPrefix(line, "  "); !ok {
				continue
			}
		}
		f := strings.Fields(rest)
		if len(f) > 2 && f[1] == "no" && f[2] == "data" {
			f = append([]string{f[0], "no data"}, f[3:]...)
		}
		if len(f) < 5 || f[0] != dep {
			continue
		}
		return tableRow{line: line, selected: selected, state: f[1], worst: f[2], best: f[3], inst: f[4]}, true
	}
	return tableRow{}, false
}

// compact returns a screen for a failure message: runs of blank lines
// replaced by a count.
func compact(screen string) string {
	var out []string
	blank := 0
	flush := func() {
		if blank > 2 {
			out = append(out, fmt.Sprintf("(%d blank lines)", blank))
		} else {
			for ; blank > 0; blank-- {
				out = append(out, "")
			}
		}
		blank = 0
	}
	for _, line := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			blank++
			continue
		}
		flush()
		out = append(out, line)
	}
	flush()
	return strings.Join(out, "\n")
}

func contains(texts ...string) func(string) bool {
	return func(screen string) bool {
		for _, text := range texts {
			if !strings.Contains(screen, text) {
				return false
			}
		}
		return true
	}
}

// orConfirmed is first, or the status line that replaces a change's own
// message once the fleet confirms it ("DEP: the fleet confirmed it, ..."):
// on a loaded machine a poll of the screen can miss the first, and the
// second is only shown after the dashboard made the change.
func orConfirmed(dep string, first func(string) bool) func(string) bool {
	return func(screen string) bool {
		return first(screen) || strings.Contains(screen, dep+": the fleet confirmed it, ")
	}
}

func matches(re string) func(string) bool {
	r := regexp.MustCompile(re)
	return func(screen string) bool { return r.MatchString(screen) }
}
