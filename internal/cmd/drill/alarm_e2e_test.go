package drill_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
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
	waitFor(t, func() bool {
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
	if r.code != cmdutil.ExitError || j.Outcome != drill.OutcomeStopped || j.Stop == nil {
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
