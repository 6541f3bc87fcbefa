package breaker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// reopen fails calls to dep through the breakers of the first n instances
// until each opens on its own, as a provider still down would.
func (fl *fleet) reopen(t *testing.T, dep string, n int) {
	t.Helper()
	for _, in := range fl.srv.Fleet().Instances()[:n] {
		d, ok := in.Dependency(dep)
		if !ok || d.Breaker == nil {
			t.Fatalf("%s has no breaker on %s", in.Name(), dep)
		}
		for i := 0; i < 100 && d.Breaker.State() != circuit.Open; i++ {
			p, err := d.Breaker.Allow()
			if err != nil {
				break
			}
			d.Breaker.Done(p, circuit.Failure)
		}
		if s := d.Breaker.State(); s != circuit.Open {
			t.Fatalf("%s's breaker on %s is %v after failing calls, want open", in.Name(), dep, s)
		}
	}
}

// errorLine is stderr's one error line ("" unless there is exactly one).
func errorLine(stderr string) string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "error: ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		return ""
	}
	return lines[0]
}

func (fl *fleet) records(t *testing.T) []audit.Record {
	t.Helper()
	l, err := fl.log.List(context.Background(), audit.Query{Subject: "breaker#openai"})
	if err != nil {
		t.Fatal(err)
	}
	out := l.Records
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// The done-when: a clear whose fleet re-opens on 3 of 4 instances
// is put back (exit 15), as it was, with a record naming the clear's; the
// audit trail reads force, clear, put-back, and the later clear.
func TestClearBakePutsTheOverrideBackWhenMostBreakersReopen(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fl := startFleet(t, e)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider outage INC-7", "--for", "2h")
	forced := clitest.Decode[struct {
		ExpiresAt time.Time `json:"expires_at"`
	}](t, e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout)
	fl.sync()
	fl.clk.Advance(time.Second) // each record its own millisecond: the trail's order

	tripped := false
	r := fl.run(t, e, func(el time.Duration) {
		// The clear reached every instance (cache 5 s, poll 1 s); then the
		// provider fails three of them again.
		if !tripped && el >= 8*time.Second {
			fl.reopen(t, sandbox.OpenAI, 3)
			tripped = true
		}
	}, "breaker", "clear", "openai", "--reason", "provider recovered?", "--bake", "5m", "--metrics-url", fl.url)
	if r.Code != exitcode.RolledBack {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.RolledBack, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "Cleared override on openai") || !strings.Contains(r.Stdout, "BAKE FAILED") ||
		!strings.Contains(r.Stdout, "re-opened on 3 of 4 instances (gw-1, gw-2, gw-3)") || !strings.Contains(r.Stdout, "ROLLED BACK openai") {
		t.Errorf("stdout does not tell the clear, the re-open and the put-back:\n%s", r.Stdout)
	}
	if !strings.Contains(errorLine(r.Stderr), "openai: its override was put back") {
		t.Errorf("stderr is not one line saying the override was put back:\n%s", r.Stderr)
	}

	// Put back as it was: its reason, actor and expiry (what was left).
	got := clitest.Decode[struct {
		Reason    string    `json:"reason"`
		ExpiresAt time.Time `json:"expires_at"`
		Active    bool      `json:"active"`
	}](t, e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout)
	if got.Reason != "provider outage INC-7" || !got.ExpiresAt.Equal(forced.ExpiresAt) || !got.Active {
		t.Errorf("override put back as %+v, want the forced one's reason and expiry %s", got, forced.ExpiresAt)
	}

	fl.clk.Advance(time.Second)
	e.MustRun(0, "breaker", "clear", "openai", "--reason", "provider recovered for real")
	recs := fl.records(t)
	var actions []string
	for _, rec := range recs {
		actions = append(actions, rec.Action)
	}
	if strings.Join(actions, ",") != "breaker.force-open,breaker.clear,breaker.force-open,breaker.clear" {
		t.Fatalf("audit trail %v, want force, clear, put-back (a force) and the later clear", actions)
	}
	if recs[2].RollbackOf != recs[1].ID || recs[1].RollbackOf != "" || recs[0].RollbackOf != "" || recs[3].RollbackOf != "" {
		t.Errorf("rollback_of: %q %q %q %q, want only the put-back naming the clear %s",
			recs[0].RollbackOf, recs[1].RollbackOf, recs[2].RollbackOf, recs[3].RollbackOf, recs[1].ID)
	}
	if !strings.Contains(recs[2].Reason, "rollback of the clear "+recs[1].ID) || !strings.Contains(recs[2].Reason, "re-opened on 3 of 4") {
		t.Errorf("the put-back's reason %q does not say what it rolls back and why", recs[2].Reason)
	}
	l := e.MustRun(0, "audit", "list", "-o", "json")
	if !strings.Contains(l.Stdout, `"rollback_of": "`+recs[1].ID+`"`) {
		t.Errorf("audit list -o json does not show rollback_of:\n%s", l.Stdout)
	}
}

// A fleet that holds: exit 0, said so, and the override stays cleared.
func TestClearBakeHeldExitsZeroAndStaysCleared(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fl := startFleet(t, e)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider outage", "--for", "1h")
	fl.sync()
	// One instance re-opening is not most of them.
	once := false
	r := fl.run(t, e, func(el time.Duration) {
		if !once && el >= 8*time.Second {
			fl.reopen(t, sandbox.OpenAI, 1)
			once = true
		}
	}, "breaker", "clear", "openai", "--reason", "provider recovered", "--bake", "1m", "--metrics-url", fl.url, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	out := clitest.Decode[struct {
		Bake struct {
			Verdict       string  `json:"verdict"`
			PeriodSeconds float64 `json:"period_seconds"`
			Polls         int     `json:"polls"`
			PutBack       []any   `json:"put_back"`
			Dependencies  []struct {
				Instances int      `json:"instances"`
				Reopened  []string `json:"reopened"`
			} `json:"dependencies"`
		} `json:"bake"`
	}](t, r.Stdout)
	b := out.Bake
	// A read every 5 s over the minute, and one at its end.
	if b.Verdict != "held" || b.PeriodSeconds != 60 || b.Polls != 13 || len(b.PutBack) != 0 || len(b.Dependencies) != 1 ||
		b.Dependencies[0].Instances != 4 || len(b.Dependencies[0].Reopened) != 1 {
		t.Errorf("bake %+v, want held after 13 reads, 1 of 4 re-opened, nothing put back", b)
	}
	if g := e.Run("breaker", "get", "openai"); g.Code != exitcode.NotFound {
		t.Errorf("the override is back after a bake that held: exit %d\n%s", g.Code, g.Stdout)
	}
	if n := len(fl.records(t)); n != 2 {
		t.Errorf("%d records, want the force and the clear", n)
	}

	// The table form says so too.
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "again", "--for", "1h")
	fl.sync()
	r = fl.run(t, e, nil, "breaker", "clear", "openai", "--reason", "recovered", "--bake", "20s", "--metrics-url", fl.url)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Baked 20s: the fleet held") || !strings.Contains(r.Stdout, "the clear stands") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A source that goes away mid-bake ends it: reported, exit 5, and the
// override is not put back on no evidence, even though the breakers had
// re-opened before it went (they were not yet read).
func TestClearBakeSourceLostDoesNotPutBack(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fl := startFleet(t, e)
	var down atomic.Bool
	gauges := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		fl.srv.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(gauges.Close)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider outage", "--for", "1h")
	fl.sync()
	r := fl.run(t, e, func(el time.Duration) {
		if el >= 7*time.Second && !down.Load() {
			down.Store(true)
			fl.reopen(t, sandbox.OpenAI, 4)
		}
	}, "breaker", "clear", "openai", "--reason", "provider recovered", "--bake", "5m", "--metrics-url", gauges.URL+sandbox.PathMetrics)
	if r.Code != exitcode.Unavailable {
		t.Fatalf("exit %d, want 5\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "3 reads in a row failed") || !strings.Contains(r.Stderr, "nothing was put back") ||
		!strings.Contains(r.Stdout, "Bake lost after") {
		t.Errorf("the lost source is not reported:\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	if g := e.Run("breaker", "get", "openai"); g.Code != exitcode.NotFound {
		t.Errorf("the override was put back blindly: exit %d\n%s", g.Code, g.Stdout)
	}
}

// Ctrl-C during the bake leaves the clear standing, says so, exits 130.
func TestClearBakeInterruptedLeavesTheClear(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fl := startFleet(t, e)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider outage", "--for", "1h")
	fl.sync()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := fl.runContext(t, e, ctx, func(el time.Duration) {
		if el >= 12*time.Second {
			cancel()
		}
	}, "breaker", "clear", "openai", "--reason", "provider recovered", "--bake", "5m", "--metrics-url", fl.url)
	if r.Code != exitcode.Interrupted {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "interrupted during the bake: the clear stands") || !strings.Contains(r.Stdout, "Bake interrupted after") {
		t.Errorf("the interrupt does not say the clear stands:\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	if g := e.Run("breaker", "get", "openai"); g.Code != exitcode.NotFound {
		t.Errorf("the override is back after an interrupted bake: exit %d", g.Code)
	}
}

// Refused before anything is cleared: a bake no source can judge, one
// longer than the context's max-override, --alarm on a context without
// CloudWatch, and flags that make no sense.
func TestClearBakeRefusedUpFront(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fl := startFleet(t, e)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider outage", "--for", "1h")
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/metrics"
	dead.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--bake", "10m", "--metrics-url", deadURL}, exitcode.Unavailable, "--bake needs a metrics source it can read"},
		{[]string{"--bake", "25h", "--metrics-url", fl.url}, exitcode.Usage, "longer than this context's max-override of 24h"},
		{[]string{"--bake", "10m", "--metrics-url", fl.url, "--alarm", "kosha-openai-errors"}, exitcode.Usage, "--alarm needs CloudWatch"},
		{[]string{"--alarm", "kosha-openai-errors"}, exitcode.Usage, "--alarm only applies with --bake"},
		{[]string{"--reopen-share", "0.3"}, exitcode.Usage, "--reopen-share only applies with --bake"},
		{[]string{"--bake", "10m", "--reopen-share", "1"}, exitcode.Usage, "not a share from 0"},
		{[]string{"--bake", "10m", "--dry-run"}, exitcode.Usage, "--bake has nothing to watch with --dry-run"},
		{[]string{"--bake", "0s"}, exitcode.Usage, "--bake 0s is not positive"},
	} {
		r := e.Run(append([]string{"breaker", "clear", "openai", "--reason", "provider recovered"}, tc.args...)...)
		if r.Code != tc.code || !strings.Contains(errorLine(r.Stderr), tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstderr:\n%s", tc.args, r.Code, tc.code, tc.want, r.Stderr)
		}
	}
	if r := e.Run("breaker", "get", "openai"); r.Code != 0 {
		t.Errorf("a refused bake cleared the override: exit %d", r.Code)
	}
	if n := len(fl.records(t)); n != 1 {
		t.Errorf("%d records after refused bakes, want the force alone", n)
	}
}

// --alarm through the context's CloudWatch (the fake, by the SDK client the
// production factory builds): an alarm that does not exist is refused
// before anything is cleared (exit 3); one that goes INSUFFICIENT_DATA
// mid-bake is bad, as AWS AppConfig counts it, and the override is put
// back (exit 15) although no breaker re-opened.
func TestClearBakeAlarmInsufficientDataPutsBack(t *testing.T) {
	e := clitest.New(t) // the AWS configuration comes from the process environment: not parallel
	cw := cwfake.New(t)
	dir := t.TempDir()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDFAKE", "AWS_SECRET_ACCESS_KEY": "fake-secret", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"), "AWS_ENDPOINT_URL_CLOUDWATCH": "", "AWS_REGION": "eu-west-1"} {
		t.Setenv(k, v)
	}
	e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n    metrics:\n      cloudwatch:\n        region: eu-west-1\n        endpoint-url: %s\n", cw.URL))
	fl := startFleet(t, e)
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-openai-errors", State: "OK", Updated: clitest.Epoch})
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider outage", "--for", "1h")
	fl.sync()

	r := e.Run("breaker", "clear", "openai", "--reason", "recovered", "--bake", "5m", "--metrics-url", fl.url, "--alarm", "kosha-openai-errors", "--alarm", "kosha-typo")
	if r.Code != exitcode.NotFound || !strings.Contains(errorLine(r.Stderr), `alarm "kosha-typo"`) || !strings.Contains(r.Stderr, "nothing was cleared") {
		t.Fatalf("an alarm that does not exist: exit %d\n%s", r.Code, r.Stderr)
	}
	e.MustRun(0, "breaker", "get", "openai")

	flipped := false
	r = fl.run(t, e, func(el time.Duration) {
		if !flipped && el >= 8*time.Second {
			cw.SetAlarm(cwfake.Alarm{Name: "kosha-openai-errors", State: "INSUFFICIENT_DATA", Updated: clitest.Epoch.Add(8 * time.Second)})
			flipped = true
		}
	}, "breaker", "clear", "openai", "--reason", "recovered", "--bake", "5m", "--metrics-url", fl.url, "--alarm", "kosha-openai-errors", "-o", "json")
	if r.Code != exitcode.RolledBack {
		t.Fatalf("exit %d, want 15\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	out := clitest.Decode[struct {
		Bake struct {
			Verdict   string `json:"verdict"`
			Why       string `json:"why"`
			BadAlarms []struct {
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"bad_alarms"`
			Dependencies []struct {
				Reopened []string `json:"reopened"`
			} `json:"dependencies"`
			PutBack []struct {
				Action string `json:"action"`
			} `json:"put_back"`
		} `json:"bake"`
	}](t, r.Stdout)
	b := out.Bake
	if b.Verdict != "alarm" || len(b.BadAlarms) != 1 || b.BadAlarms[0].State != "INSUFFICIENT_DATA" || len(b.Dependencies) != 1 ||
		len(b.Dependencies[0].Reopened) != 0 || len(b.PutBack) != 1 || b.PutBack[0].Action != "put-back" {
		t.Errorf("bake %+v, want the alarm's INSUFFICIENT_DATA to put openai back, no breaker re-opened", b)
	}
	if g := e.Run("breaker", "get", "openai"); g.Code != 0 {
		t.Errorf("the override was not put back: exit %d", g.Code)
	}
	var asked bool
	for _, q := range cw.AlarmRequests() {
		asked = asked || slices.Contains(q.Names, "kosha-openai-errors")
	}
	if !asked {
		t.Errorf("CloudWatch was not asked for the alarm: %+v", cw.AlarmRequests())
	}
}
