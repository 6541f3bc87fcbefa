package drill_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// withCloudWatchFake points the local context's AWS configuration (read
// from the environment, as on an operator's machine) at a CloudWatch fake:
// the production factory builds the real SDK client, which speaks RPCv2
// CBOR to it.
func withCloudWatchFake(t *testing.T) *cwfake.Server {
	t.Helper()
	cw := cwfake.New(t)
	dir := t.TempDir()
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFAKE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_ENDPOINT_URL_CLOUDWATCH", cw.URL)
	return cw
}

// The done-when: the example alarm drill runs against the sandbox
// and the CloudWatch fake, an alarm flips to ALARM mid-run, and the drill
// stops and rolls everything back long before the levers' own expiry.
func TestExampleAlarmDrillRollsBackWhenTheAlarmFlips(t *testing.T) {
	s := onSandbox(t)
	cw := withCloudWatchFake(t)
	since := time.Now().UTC().Truncate(time.Second)
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Reason: "fine", Updated: since})
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-db-cpu", State: "OK", Reason: "fine", Updated: since})
	cw.SetAlarm(cwfake.Alarm{Name: "other-team", State: "ALARM", Updated: since})

	jpath, junit := filepath.Join(t.TempDir(), "journal.json"), filepath.Join(t.TempDir(), "junit.xml")
	reportPath := filepath.Join(t.TempDir(), "report.html")
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out := runDrillJournal(filepath.Join(drillsDir, "alarm-stop.yaml"), jpath, junit, "--report", reportPath)
		done <- result{code, out}
	}()
	// Flip the alarm once the levers are pulled and the drill soaks.
	wait.Until(t, "the drill to soak (step 3 of 4 running)", func() bool {
		j, err := tryJournal(jpath)
		return err == nil && len(j.Steps) == 4 && j.Steps[2].Status == drill.StatusRunning
	})
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "ALARM", Reason: "Threshold Crossed: 3 datapoints > 1", Updated: since.Add(time.Second)})
	var r result
	select {
	case r = <-done:
	case <-time.After(wait.Ceiling):
		t.Fatal("the drill did not stop within the wait ceiling of the alarm")
	}
	j := readJournal(t, jpath)
	if r.code != exitcode.Error || j.Outcome != drill.OutcomeStopped || j.Stop == nil {
		t.Fatalf("exit %d, outcome %s: %s\n%s", r.code, j.Outcome, j.Reason, r.out)
	}
	if a := j.Stop.Alarms; len(a) != 1 || a[0].Name != "kosha-api-5xx" || a[0].Reason != "Threshold Crossed: 3 datapoints > 1" ||
		!a[0].Since.Equal(since.Add(time.Second)) {
		t.Errorf("stop alarms = %+v", a)
	}
	if j.Steps[2].Status != drill.StatusStopped || j.Steps[3].Status != drill.StatusSkipped {
		t.Errorf("steps = %+v", j.Steps)
	}
	assertRolledBack(t, s, j)
	for _, rb := range j.Rollbacks {
		if rb.ExpiresAt == nil || !rb.EndedAt.Before(*rb.ExpiresAt) {
			t.Errorf("rollback %s ended %v, its lever lapses at %v: want the rollback first", rb.ID, rb.EndedAt, rb.ExpiresAt)
		}
	}
	if x := readFile(t, junit); !strings.Contains(x, `name="stop_alarm" value="kosha-api-5xx"`) || !strings.Contains(x, `name="stop_alarm_reason" value="Threshold Crossed: 3 datapoints &gt; 1"`) {
		t.Errorf("JUnit does not name the alarm:\n%s", x)
	}
	if len(cw.AlarmRequests()) == 0 {
		t.Error("no DescribeAlarms request reached the fake")
	}
	assertStoppedReport(t, readFile(t, reportPath), j)
	for _, req := range cw.AlarmRequests() {
		if req.Prefix != "kosha-" {
			t.Errorf("request %+v: want the one prefix kosha-", req)
		}
	}
}

// guardRun is the example alarm drill run in-process on the injected
// clock, against the stand-in fleet (gauges) and the CloudWatch fake
// (alarms): the production factory and SDK client, retries off so a
// failing call costs no wall time.
type guardRun struct {
	e            *clitest.Env
	cw           *cwfake.Server
	jpath, junit string
	done         chan clitest.Result
}

func newGuardRun(t *testing.T) *guardRun {
	t.Helper()
	e := clitest.New(t)
	fl := newFleet(t, e.Clock)
	cw := withCloudWatchFake(t)
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	t.Setenv("SANDBOX_URL", fl.srv.URL)
	dir := t.TempDir()
	return &guardRun{e: e, cw: cw, jpath: filepath.Join(dir, "journal.json"), junit: filepath.Join(dir, "junit.xml"), done: make(chan clitest.Result, 1)}
}

func (g *guardRun) start() {
	go func() {
		g.done <- g.e.Run("drill", "run", filepath.Join(drillsDir, "alarm-stop.yaml"), "--journal", g.jpath, "--junit", g.junit)
	}()
}

// soaking waits until the drill soaks (its levers pulled) with the stop
// conditions' monitor waiting on the fake clock.
func (g *guardRun) soaking(t *testing.T) {
	t.Helper()
	wait.Until(t, "the drill to soak (step 3 of 4 running) with its monitor waiting on the clock", func() bool {
		j, err := tryJournal(g.jpath)
		return err == nil && len(j.Steps) == 4 && j.Steps[2].Status == drill.StatusRunning && g.e.Clock.Waiters() > 0
	})
}

// advanceUntilDone moves the fake clock one poll interval at a time, each
// time the monitor waits, until the run ends; it returns the result and
// how many intervals passed.
func (g *guardRun) advanceUntilDone(t *testing.T, interval time.Duration) (clitest.Result, int) {
	t.Helper()
	n := 0
	ceiling := time.NewTimer(wait.Ceiling)
	defer ceiling.Stop()
	for {
		// Taken before the check, so a wait that begins after it wakes us.
		changed := g.e.Clock.WaitersChanged()
		select {
		case r := <-g.done:
			return r, n
		default:
		}
		if g.e.Clock.Waiters() > 0 {
			g.e.Clock.Advance(interval)
			n++
			continue
		}
		select {
		case r := <-g.done:
			return r, n
		case <-changed:
		case <-ceiling.C:
			t.Fatalf("the drill did not end after %d poll intervals of the fake clock", n)
		}
	}
}

// assertNothingWritten checks a refused run pulled no lever and audited
// nothing.
func (g *guardRun) assertNothingWritten(t *testing.T) {
	t.Helper()
	if _, err := overrides(t, g.e.Clock).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai was forced by a refused drill: %v", err)
	}
	if recs := g.e.MustRun(0, "audit", "list", "-o", "json").Stdout; strings.Contains(recs, `"action"`) {
		t.Errorf("a refused drill wrote audit records:\n%s", recs)
	}
}

const alarmPoll = 250 * time.Millisecond // alarm-stop.yaml's poll_interval

// Issue 22's done-when: a stop alarm that matches nothing, or a
// DescribeAlarms the caller is denied, pulls no lever: the preflight
// refuses with the condition, the cause and the fix (exit 3 and 6).
func TestAlarmDrillRefusedAtPreflight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(cw *cwfake.Server)
		code  int
		want  []string
	}{
		{"alarm matches nothing", func(cw *cwfake.Server) {
			cw.SetAlarm(cwfake.Alarm{Name: "other-team", State: "OK", Updated: time.Now()})
		}, exitcode.NotFound, []string{`stop condition "a service alarm fired" could not be evaluated`, "no CloudWatch alarm matches kosha-* in eu-west-1",
			"aws cloudwatch describe-alarms --region eu-west-1"}},
		{"DescribeAlarms denied", func(cw *cwfake.Server) {
			cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Updated: time.Now()})
			cw.Authorize = func(action, _ string, _ map[string][]string) string {
				if action == "cloudwatch:DescribeAlarms" {
					return "User: arn:aws:sts::123456789012:assumed-role/drill-runner/ci is not authorized to perform: cloudwatch:DescribeAlarms"
				}
				return ""
			}
		}, exitcode.Auth, []string{`stop condition "a service alarm fired" could not be evaluated`, "AccessDenied", "grant cloudwatch:DescribeAlarms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuardRun(t)
			tc.setup(g.cw)
			g.start()
			r := <-g.done
			if r.Code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:%s\nstderr:%s", r.Code, tc.code, r.Stdout, r.Stderr)
			}
			var errLine string
			for _, l := range strings.Split(r.Stderr, "\n") {
				if strings.HasPrefix(l, "error: ") {
					errLine = l
				}
			}
			for _, want := range append(tc.want, "refused before any lever was pulled", "nothing was done") {
				if !strings.Contains(errLine, want) {
					t.Errorf("error line lacks %q: %s", want, errLine)
				}
			}
			j := readJournal(t, g.jpath)
			if j.Outcome != drill.OutcomeRefused || j.Guard == nil || j.Guard.Phase != drill.GuardPreflight || len(j.Rollbacks) != 0 || j.ExitCode != tc.code {
				t.Errorf("journal: outcome %s guard %+v rollbacks %+v exit %d", j.Outcome, j.Guard, j.Rollbacks, j.ExitCode)
			}
			if x := readFile(t, g.junit); !strings.Contains(x, `name="outcome" value="refused"`) {
				t.Errorf("JUnit does not say refused:\n%s", x)
			}
			g.assertNothingWritten(t)
		})
	}
}

// An alarm flipping mid-run still stops the drill and rolls back within a
// poll interval or two of the fake clock.
func TestAlarmDrillStopsWithinAPollOfTheAlarm(t *testing.T) {
	g := newGuardRun(t)
	since := time.Now().UTC().Truncate(time.Second)
	g.cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Updated: since})
	g.start()
	g.soaking(t)
	flipped := g.e.Clock.Now()
	g.cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "ALARM", Reason: "Threshold Crossed", Updated: since.Add(time.Second)})
	r, polls := g.advanceUntilDone(t, alarmPoll)
	j := readJournal(t, g.jpath)
	if r.Code != exitcode.Error || j.Outcome != drill.OutcomeStopped || j.Stop == nil {
		t.Fatalf("exit %d outcome %s: %s\n%s", r.Code, j.Outcome, j.Reason, r.Stderr)
	}
	if after := j.Stop.At.Sub(flipped); polls > 2 || after > 2*alarmPoll {
		t.Errorf("stopped %s (%d poll intervals) after the alarm fired, want within two", after, polls)
	}
	if !j.RollbacksOK {
		t.Errorf("rollbacks: %+v", j.Rollbacks)
	}
	if _, err := overrides(t, g.e.Clock).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai still forced after the stop: %v", err)
	}
}

// CloudWatch going away mid-run: the stop condition stays unevaluable, and
// the drill stops and rolls back once the documented grace (3 polls and
// 30 s) has passed, within a poll interval of it: "guard lost".
func TestAlarmDrillStopsWhenCloudWatchGoesAway(t *testing.T) {
	g := newGuardRun(t)
	g.cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Updated: time.Now()})
	g.start()
	g.soaking(t)
	gone := g.e.Clock.Now()
	g.cw.Close()
	r, _ := g.advanceUntilDone(t, alarmPoll)
	j := readJournal(t, g.jpath)
	if r.Code != exitcode.Unavailable || j.Outcome != drill.OutcomeGuardLost || j.Guard == nil || j.Guard.Role != drill.RoleStopCondition {
		t.Fatalf("exit %d outcome %s guard %+v: %s\n%s", r.Code, j.Outcome, j.Guard, j.Reason, r.Stderr)
	}
	if lost := j.Guard.At.Sub(gone); lost < drill.DefaultGuardGraceFor || lost > drill.DefaultGuardGraceFor+2*alarmPoll {
		t.Errorf("the guard was lost %s after CloudWatch went away, want within a poll or two of the %s grace", lost, drill.DefaultGuardGraceFor)
	}
	if !j.RollbacksOK || j.Steps[2].Status != drill.StatusGuardLost || j.Steps[3].Status != drill.StatusSkipped {
		t.Errorf("steps %+v rollbacks %+v", j.Steps, j.Rollbacks)
	}
	if _, err := overrides(t, g.e.Clock).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai still forced after the guard was lost: %v", err)
	}
	if !strings.Contains(r.Stdout, "GUARD LOST") {
		t.Errorf("stdout = %s", r.Stdout)
	}
	if x := readFile(t, g.junit); !strings.Contains(x, `name="outcome" value="guard_lost"`) || !strings.Contains(x, `type="guard_lost"`) {
		t.Errorf("JUnit does not say guard lost:\n%s", x)
	}
}

// An alarm stop condition read from an endpoint that serves no CloudWatch
// (a DynamoDB-only server behind one endpoint for every service) is refused at
// preflight with the fix for alarms: a CloudWatch endpoint, never a
// Prometheus /metrics, which cannot answer alarms.
func TestAlarmDrillOnAnEndpointThatIsNotCloudWatch(t *testing.T) {
	g := newGuardRun(t)
	notCW := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.service#UnknownOperationException"}`))
	}))
	t.Cleanup(notCW.Close)
	t.Setenv("AWS_ENDPOINT_URL_CLOUDWATCH", notCW.URL)
	g.start()
	r := <-g.done
	var errLine string
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(l, "error: ") {
			errLine = l
		}
	}
	if r.Code == 0 || !strings.Contains(errLine, notCW.URL+" serves no CloudWatch") ||
		!strings.Contains(errLine, "--service-endpoint cloudwatch=URL") || strings.Contains(errLine, "rometheus") ||
		!strings.Contains(errLine, "refused before any lever was pulled") {
		t.Errorf("exit %d, error line: %s\nstderr:\n%s", r.Code, errLine, r.Stderr)
	}
	g.assertNothingWritten(t)
}
