package apply_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"

	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/levers/apply"
	"github.com/kosha-platform/koshactl/internal/cmd/levers/diff"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// fleet serves kosha_breaker_state for the diff's fleet side.
type fleet struct {
	mu   sync.Mutex
	text string
}

func (f *fleet) set(text string) { f.mu.Lock(); f.text = text; f.mu.Unlock() }

func newEnv(t *testing.T) (*clitest.Env, *fleet, string) {
	e := clitest.New(t, clitest.Parallel())
	fl := &fleet{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		fmt.Fprint(w, fl.text)
	}))
	t.Cleanup(srv.Close)
	e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n    metrics:\n      prometheus:\n        url: %s/metrics\n", srv.URL))
	return e, fl, filepath.Join(e.Dir, "levers.yaml")
}

func gauges(states map[string]int) string {
	var b strings.Builder
	for dep, st := range states {
		for _, gw := range []string{"gw-1", "gw-2"} {
			fmt.Fprintf(&b, "kosha_breaker_state{dependency=%q,instance=%q} %d\n", dep, gw, st)
		}
	}
	return b.String()
}

// window writes a file with one postgres window from start for d.
func window(t *testing.T, path, reason string, start time.Time, d time.Duration) {
	src := fmt.Sprintf("version: 1\ncontext: local\nname: maintenance\nwindows:\n  - dependency: postgres\n    reason: %s\n    start: %s\n    duration: %s\n",
		reason, start.UTC().Format(time.RFC3339), d)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, e *clitest.Env, dep string) (overrideview.OverrideView, bool) {
	r := e.Run("breaker", "get", dep, "-o", "json")
	if r.Code == 3 {
		return overrideview.OverrideView{}, false
	}
	return clitest.Decode[overrideview.OverrideView](t, r.Stdout), true
}

// The scenario on the fake clock: a window 10 s ahead opens at
// its start and expires at its end; the fleet's side is judged; an
// incident override on another dependency is reported by diff and left
// alone by apply; an edit is noticed and applied.
func TestWindowLifecycleThroughDiffAndApply(t *testing.T) {
	t.Parallel()
	e, fl, path := newEnv(t)
	start := clitest.Epoch.Add(10 * time.Second)
	window(t, path, "RDS minor upgrade (CHG-1042)", start, 30*time.Minute)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "INC-7 provider outage", "--for", "2h")
	fl.set(gauges(map[string]int{"openai": 3, "postgres": 0, "core-api": 0, "screening-sim": 0}))

	// Issue 45: an incident lever alone is information, not a difference
	// for apply: diff exits 0 (a scheduled diff stayed red for the whole
	// incident), and says so.
	r := e.MustRun(0, "diff", "-f", path, "-o", "json")
	res := clitest.Decode[diff.Result](t, r.Stdout)
	if res.InSync || res.ApplyChanges != 0 || len(res.Differences) != 1 || res.Differences[0].Kind != "unplanned_override" || res.Differences[0].Action != "none" {
		t.Fatalf("before the window: %+v", res)
	}
	if !strings.Contains(r.Stderr, "nothing for apply to change: 1 difference it leaves alone (unplanned_override), shown as information") {
		t.Errorf("diff does not say the incident lever is information:\n%s", r.Stderr)
	}
	e.MustRun(0, "apply", "-f", path)
	if _, ok := get(t, e, "postgres"); ok {
		t.Fatal("apply forced postgres before its window")
	}

	e.Clock.Advance(10 * time.Second)
	r = e.MustRun(0, "apply", "-f", path, "-o", "json")
	ar := clitest.Decode[apply.Result](t, r.Stdout)
	if len(ar.Results) != 1 || ar.Results[0].Action != "forced" || ar.Results[0].Dependency != "postgres" || ar.Results[0].AuditID == "" {
		t.Fatalf("at the window's start: %+v", ar.Results)
	}
	pg, ok := get(t, e, "postgres")
	if !ok || !pg.Active || *pg.ExpiresAt != "2026-11-29T19:30:10.000Z" || !strings.Contains(pg.ManagedBy, `"window":"postgres@2026-11-29T19:00:10Z"`) {
		t.Fatalf("postgres override %+v", pg)
	}
	if o, _ := get(t, e, "openai"); o.Reason != "INC-7 provider outage" || o.Version != 1 {
		t.Errorf("apply touched the incident override: %+v", o)
	}

	// The fleet obeys postgres on one instance only: not obeyed once past
	// the bound; then it obeys and only the incident lever remains.
	e.Clock.Advance(2 * time.Minute)
	fl.set("kosha_breaker_state{dependency=\"postgres\",instance=\"gw-1\"} 3\nkosha_breaker_state{dependency=\"postgres\",instance=\"gw-2\"} 0\n" +
		gauges(map[string]int{"openai": 3}))
	r = e.MustRun(0, "diff", "-f", path)
	if !strings.Contains(r.Stdout, "not_obeyed") || !strings.Contains(r.Stdout, "unplanned_override") {
		t.Errorf("diff with postgres not obeyed:\n%s", r.Stdout)
	}
	fl.set(gauges(map[string]int{"openai": 3, "postgres": 3}))
	r = e.MustRun(0, "diff", "-f", path, "-o", "markdown")
	if !strings.Contains(r.Stdout, "| openai | unplanned\\_override | none |") || strings.Contains(r.Stdout, "postgres | not") {
		t.Errorf("Markdown diff:\n%s", r.Stdout)
	}

	// Edited after it was applied: a new override for the new content.
	window(t, path, "RDS minor upgrade (CHG-1043)", start, 30*time.Minute)
	r = e.MustRun(1, "diff", "-f", path, "--no-gauges")
	if !strings.Contains(r.Stdout, "window_changed") ||
		!strings.Contains(r.Stderr, "would make 1 change (and 1 difference it leaves alone)") {
		t.Errorf("diff after an edit:\n%s\n%s", r.Stdout, r.Stderr)
	}
	e.MustRun(0, "apply", "-f", path)
	if pg, _ := get(t, e, "postgres"); !strings.Contains(pg.Reason, "CHG-1043") || pg.Version != 2 {
		t.Errorf("after the edit: %+v", pg)
	}

	// At the window's end the override lapses on its own; the fleet still
	// reporting it forced is a difference of its own.
	e.Clock.Set(start.Add(30 * time.Minute))
	if pg, _ := get(t, e, "postgres"); pg.Active {
		t.Error("the window's override is still in force at its end")
	}
	// Within the fleet's lag bound that is convergence; past it, a
	// difference.
	if r = e.MustRun(0, "diff", "-f", path); strings.Contains(r.Stdout, "lapsed_still_forced") {
		t.Errorf("diff at the end, within the bound:\n%s", r.Stdout)
	}
	e.Clock.Advance(2 * time.Minute)
	r = e.MustRun(0, "diff", "-f", path)
	if !strings.Contains(r.Stdout, "lapsed_still_forced") {
		t.Errorf("diff at the end:\n%s", r.Stdout)
	}
}

// Bad input: every problem with its line, exit 2, nothing written.
func TestBadFileIsRefusedWhole(t *testing.T) {
	t.Parallel()
	e, _, path := newEnv(t)
	src := "version: 1\ncontext: local\nwindows:\n  - dependency: postgres\n    reason: ok\n    start: 2026-11-29T19:00:00Z\n    duration: 1h\n" +
		"  - dependency: postgress\n    reason: typo\n    start: 2026-11-29T19:00:00\n    duration: 1h\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	// One problem a line (issue 45: they were joined on one).
	for _, cmd := range []string{"apply", "diff"} {
		r := e.MustRun(2, cmd, "-f", path)
		lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: %d lines on stderr, want one per problem:\n%s", cmd, len(lines), r.Stderr)
		}
		for i, want := range []string{`levers.yaml:8: unknown dependency "postgress"`, `levers.yaml:10: start "2026-11-29T19:00:00" has no time zone`} {
			if !strings.HasPrefix(lines[i], "error: ") || !strings.Contains(lines[i], want) {
				t.Errorf("%s: line %d is %q, want error: …%s", cmd, i+1, lines[i], want)
			}
		}
	}
	if _, ok := get(t, e, "postgres"); ok {
		t.Error("a file with problems applied its valid window")
	}
	e.MustRun(2, "diff")
}

// --watch reconciles every interval on the clock and stops between
// rounds: the window opens within one interval of its start.
func TestWatchOpensTheWindowWithinOneInterval(t *testing.T) {
	t.Parallel()
	e, _, path := newEnv(t)
	window(t, path, "maintenance", clitest.Epoch.Add(10*time.Second), 5*time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	ios, _, out, _ := iostreams.Test()
	f := e.Factory(ios)
	done := make(chan error, 1)
	go func() {
		done <- apply.Run(ctx, f, &apply.Options{File: path, Watch: true, Interval: 5 * time.Second, Output: "table"})
	}()
	for round := range 3 {
		waitWaiting(t, e.Clock, round+1)
		if round < 2 {
			if _, ok := get(t, e, "postgres"); ok {
				t.Fatalf("forced before its window (round %d)", round+1)
			}
			e.Clock.Advance(5 * time.Second)
		}
	}
	if pg, ok := get(t, e, "postgres"); !ok || !pg.Active {
		t.Fatal("the window did not open within one interval of its start")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("--watch stopped with %v, want a clean stop", err)
	}
	if !strings.Contains(out.String(), "forced postgres until 2026-11-29T19:05:10.000Z") {
		t.Errorf("output:\n%s", out.String())
	}
}

// waitWaiting waits until the reconciler waits on the clock between
// rounds (its round is done), woken by the clock, never by a sleep. A
// round that forces reads the context's call rates first (two scrapes 5s
// apart on the wall clock), so a round is never quick: the bound is the
// suite's ceiling, not a guess at how long a round takes.
func waitWaiting(t *testing.T, clk *clocktest.Fake, round int) {
	t.Helper()
	ceiling := time.NewTimer(wait.Ceiling)
	defer ceiling.Stop()
	for {
		changed := clk.WaitersChanged() // before the check: a wait that starts after it wakes us
		if clk.Waiters() > 0 {
			return
		}
		select {
		case <-changed:
		case <-ceiling.C:
			t.Fatalf("round %d never finished", round)
		}
	}
}

// sideEffect is a terminal's stdin that does something the moment the
// prompt reads it (an operator acting meanwhile), then types line.
type sideEffect struct {
	do   func()
	line string
	done bool
}

func (s *sideEffect) Read(p []byte) (int, error) {
	if s.done {
		return 0, io.EOF
	}
	s.do()
	s.done = true
	return copy(p, s.line), nil
}

// A round past one transaction's size is refused, nothing written, unless
// asked in chunks; with --chunked it is several transactions: when one of
// them is refused (an operator forced a dependency between apply's read and
// its write), every change is listed, written or not and why, and the round
// exits 16 (a partial write), never 4 (nothing was done).
func TestAPartlyWrittenRoundSaysWhatLanded(t *testing.T) {
	t.Parallel()
	e, _, path := newEnv(t)
	var deps, windows []string
	for i := range 60 {
		dep := fmt.Sprintf("d%02d", i)
		deps = append(deps, dep)
		windows = append(windows, fmt.Sprintf("  - {dependency: %s, reason: maintenance, start: %s, duration: 30m}", dep, clitest.Epoch.Format(time.RFC3339)))
	}
	e.WriteConfig("contexts:\n  local:\n    store:\n      local: {}\n    protected: true\n    dependencies: [" + strings.Join(deps, ", ") + "]\n")
	if err := os.WriteFile(path, []byte("version: 1\ncontext: local\nwindows:\n"+strings.Join(windows, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.TTY = true
	e.In = &sideEffect{line: "local\n", do: func() {}}
	if r := e.Run("apply", "-f", path); r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "60 overrides do not fit one transaction") ||
		!strings.Contains(r.Stderr, "--chunked") || strings.Contains(r.Stdout, "forced d") {
		t.Fatalf("a round of 60 without --chunked: exit %d, want 2 and nothing written\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, ok := get(t, e, "d00"); ok {
		t.Fatal("a refused round wrote d00")
	}
	e.In = &sideEffect{line: "local\n", do: func() {
		ios, _, _, _ := iostreams.Test()
		f := e.Factory(ios)
		env, err := f.Env(context.Background())
		if err != nil {
			t.Error(err)
			return
		}
		if _, _, err := levertest.Force(context.Background(), env.Store, env.Clock, env.Audit(), levertest.Req{Dependency: "d55", Reason: "INC-9",
			Actor: "oncall", For: time.Hour}); err != nil {
			t.Error(err)
		}
	}}
	r := e.Run("apply", "-f", path, "--chunked")
	if r.Code != exitcode.PartialWrite || !strings.Contains(r.Stderr, "50 of 60 changes of this round were written (listed above)") ||
		strings.Contains(r.Stderr, "nothing of this round was written") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if n := strings.Count(r.Stdout, "forced d"); n != 50 || !strings.Contains(r.Stdout, "forced d49 ") || strings.Contains(r.Stdout, "forced d50 ") {
		t.Errorf("%d forces listed, want d00..d49:\n%s", n, r.Stdout)
	}
	for i := 50; i < 60; i++ {
		if !strings.Contains(r.Stdout, fmt.Sprintf("Not written: d%02d (transaction 2): ", i)) {
			t.Errorf("d%02d is not listed as not written:\n%s", i, r.Stdout)
		}
	}
	if o, ok := get(t, e, "d55"); !ok || o.Reason != "INC-9" {
		t.Errorf("the operator's override of d55: %+v", o)
	}
}

// A dry run says what apply would do: an override that lapsed since the
// window opened is no override to replace, the window is forced.
func TestDryRunNamesAForceOverALapsedOverride(t *testing.T) {
	t.Parallel()
	e, _, path := newEnv(t)
	e.MustRun(0, "breaker", "force-open", "postgres", "--reason", "INC-3", "--for", "1m")
	window(t, path, "maintenance", clitest.Epoch, 30*time.Minute)
	e.Clock.Advance(5 * time.Minute)
	r := e.MustRun(0, "apply", "-f", path, "--dry-run", "-o", "json")
	res := clitest.Decode[apply.Result](t, r.Stdout)
	if len(res.Results) != 1 || res.Results[0].Action != "would-force" {
		t.Errorf("dry run over a lapsed override: %+v", res.Results)
	}
}

// Issue 46: a dry run says, for each window that would force, what the
// force does to the platform's tools (table and JSON); a window that would
// clear says nothing of tools.
func TestDryRunShowsEachForcesImpact(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.WriteConfig("contexts:\n  local:\n    store:\n      local: {}\n")
	path := filepath.Join(e.Dir, "levers.yaml")
	src := fmt.Sprintf("version: 1\ncontext: local\nname: maintenance\nwindows:\n  - dependency: screening-sim\n    reason: vendor maintenance\n    start: %s\n    duration: 30m\n",
		clitest.Epoch.UTC().Format(time.RFC3339))
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(time.Minute)
	res := clitest.Decode[struct {
		Results []struct {
			Action string `json:"action"`
			Impact *struct {
				Tools []struct {
					Tool      string `json:"tool"`
					Behaviour string `json:"behaviour"`
				} `json:"tools"`
			} `json:"impact"`
		} `json:"results"`
	}](t, e.MustRun(0, "apply", "-f", path, "--dry-run", "-o", "json").Stdout)
	if len(res.Results) != 1 || res.Results[0].Action != "would-force" || res.Results[0].Impact == nil || len(res.Results[0].Impact.Tools) != 1 ||
		res.Results[0].Impact.Tools[0].Tool != "screen_entity" || res.Results[0].Impact.Tools[0].Behaviour != "deferred" {
		t.Fatalf("dry run %+v, want screening-sim's force with screen_entity deferred", res.Results)
	}
	if out := e.MustRun(0, "apply", "-f", path, "--dry-run").Stdout; !strings.Contains(out, "impact of forcing screening-sim") ||
		!strings.Contains(out, "screen_entity") {
		t.Errorf("the dry run's table shows no impact:\n%s", out)
	}
}

// A dry run of three windows that would force reads the context's
// CloudWatch call rates once (one GetMetricData request, not one a
// window), and each window's impact carries its own tool's rate from it.
func TestDryRunReadsTheRatesOnceForEveryWindow(t *testing.T) {
	e := clitest.New(t) // the AWS configuration comes from the process environment: not parallel
	cw := cwfake.New(t)
	dir := t.TempDir()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDFAKE", "AWS_SECRET_ACCESS_KEY": "fake-secret", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"), "AWS_ENDPOINT_URL_CLOUDWATCH": "", "AWS_REGION": "eu-west-1"} {
		t.Setenv(k, v)
	}
	e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n    metrics:\n      cloudwatch:\n        region: eu-west-1\n        endpoint-url: %s\n", cw.URL))
	for m := -10; m <= 0; m++ {
		at := clitest.Epoch.Add(time.Duration(m) * time.Minute)
		cw.PutCount(gauge.ToolCallsMetricName, map[string]string{gauge.DimTool: "screen_entity"}, at, 30)
		cw.PutCount(gauge.ToolCallsMetricName, map[string]string{gauge.DimTool: "search_knowledge_base"}, at, 12)
	}
	path := filepath.Join(e.Dir, "levers.yaml")
	src := "version: 1\ncontext: local\nname: maintenance\nwindows:\n"
	for _, dep := range []string{"screening-sim", "openai", "core-api"} {
		src += fmt.Sprintf("  - dependency: %s\n    reason: vendor maintenance\n    start: %s\n    duration: 30m\n", dep, clitest.Epoch.UTC().Format(time.RFC3339))
	}
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	res := clitest.Decode[struct {
		Results []struct {
			Dependency string `json:"dependency"`
			Impact     *struct {
				Tools []struct {
					Tool           string   `json:"tool"`
					CallsPerMinute *float64 `json:"calls_per_minute"`
				} `json:"tools"`
			} `json:"impact"`
		} `json:"results"`
	}](t, e.MustRun(0, "apply", "-f", path, "--dry-run", "-o", "json").Stdout)
	if n := cw.Calls(); n != 1 {
		t.Errorf("%d GetMetricData requests for three windows, want 1", n)
	}
	want := map[string]float64{"screening-sim": 30, "openai": 12, "core-api": 12} // core-api's first tool is search_knowledge_base
	if len(res.Results) != 3 {
		t.Fatalf("results %+v, want three windows that would force", res.Results)
	}
	for _, r := range res.Results {
		if r.Impact == nil || len(r.Impact.Tools) == 0 || r.Impact.Tools[0].CallsPerMinute == nil || *r.Impact.Tools[0].CallsPerMinute != want[r.Dependency] {
			t.Errorf("%s: impact %+v, want its first tool at %v calls/min", r.Dependency, r.Impact, want[r.Dependency])
		}
	}
}
