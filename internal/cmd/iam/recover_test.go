package iam_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
)

// leversDrill forces openai and drains agent-1 on context dev.
const leversDrill = "version: 1\nname: recover-levers\ncontext: dev\ntimeout: 10m\nsteps:\n" +
	"  - id: force\n    breaker.force-open: {dependency: openai, reason: iam recover test}\n" +
	"  - id: drain\n    ratelimit.drain: {client: agent-1, reason: iam recover test}\n"

// failedRun leaves what drill recover is for: a run whose rollbacks did
// not finish. The drill runs under the drill-runner policy without
// dynamodb:DeleteItem, so clearing its override fails as it would on AWS;
// the journal then reads as a SIGKILL would leave it (both rollbacks
// pending, the run's process gone: it ran in this process, which lives
// on). It returns the journal's path.
func (w *awsWorld) failedRun(t *testing.T, dir string) string {
	t.Helper()
	w.enf.SetPolicy(nil)
	w.Run("breaker", "clear", "openai", "--reason", "iam test")
	w.MustRun(0, "ratelimit", "set", "agent-1", "--tokens", "7", "--reason", "setup")
	w.enf.SetPolicy(without(t, policyOf(t, iam.DrillRunner, testTarget), iam.DeleteItem))
	file := filepath.Join(dir, "levers.yaml")
	if err := os.WriteFile(file, []byte(leversDrill), 0o600); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, "journal.json")
	if err := os.Remove(jpath); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if r := w.Run("drill", "run", file, "--journal", jpath); r.Code != exitcode.Rollback {
		t.Fatalf("drill run without DeleteItem: exit %d, want %d (its rollback denied)\n%s", r.Code, exitcode.Rollback, r.Stderr)
	}
	w.enf.TakeDenials()
	b, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	var j drill.Journal
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	c := exec.CommandContext(t.Context(), "true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	j.Runner.PID, j.Runner.ProcStart = c.Process.Pid, "gone/1"
	for i := range j.Rollbacks {
		j.Rollbacks[i].Status = drill.StatusPending
	}
	if b, err = json.Marshal(j); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w.rec.take()
	return jpath
}

// without is doc with action removed from every statement holding it.
func without(t *testing.T, doc *iam.Document, action string) *iam.Document {
	t.Helper()
	found := false
	for i := len(doc.Statement) - 1; i >= 0; i-- {
		if slices.Contains(doc.Statement[i].Action, action) {
			doc, found = withoutAction(*doc, i, action), true
		}
	}
	if !found {
		t.Fatalf("the policy grants no %s", action)
	}
	return doc
}

// drill recover, run on a real failed run under the drill-runner policy,
// passes and calls exactly what iam.Commands declares for it; with any one
// of those actions removed from the policy it fails, denied that action,
// and says so (without sns:Publish it warns that the notification was
// denied, and the recovery stands).
func TestDrillRecoverCallsExactlyItsDeclaredOperations(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	w.prepare()
	dir := t.TempDir()
	jpath := w.failedRun(t, dir)
	w.asRole(t, iam.DrillRunner)
	got := w.run(t, "drill", "recover", jpath)
	if d := sameNeeds(got, iam.Commands["drill recover"]); d != "" {
		t.Errorf("drill recover: %s", d)
	}
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("drill recover as drill-runner: denied %v", d)
	}
	var actions []string
	for _, n := range iam.Commands["drill recover"] {
		if !slices.Contains(actions, n.Action) {
			actions = append(actions, n.Action)
		}
	}
	for _, action := range actions {
		jpath := w.failedRun(t, dir)
		w.enf.SetPolicy(without(t, policyOf(t, iam.DrillRunner, testTarget), action))
		r := w.Run("drill", "recover", jpath)
		denied := w.enf.TakeDenials()
		if action == iam.SNSPublish {
			// A notification never fails the recovery: denied Publish is a
			// warning line, and recover exits 0.
			if r.Code != 0 || len(denied) == 0 || denied[0].Action != action || !deniedNotification(r.Stderr) {
				t.Errorf("drill recover without %s: exit %d, denied %v\n%s%s", action, r.Code, denied, r.Stdout, r.Stderr)
			}
			continue
		}
		if r.Code == 0 || len(denied) == 0 || denied[0].Action != action || !mentionsDenial(r.Stdout+r.Stderr) {
			t.Errorf("drill recover without %s: exit %d, denied %v\n%s%s", action, r.Code, denied, r.Stdout, r.Stderr)
		}
	}
}

// drill recover denied the audit log's PutItem: its clear of the drill's
// override is made (DeleteItem is granted) and its record is not. The
// rollback says so (unaudited, once: not retried into "already clear"),
// the override is gone, and recover exits 8 naming the missing record,
// not 0 and not 9 (no lever is left pulled). Even the clear's claim was
// denied, so no `audit repair` is offered: it would have nothing to write
// the record from.
func TestDrillRecoverWithAuditPutDeniedSaysTheClearIsUnrecorded(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	w.prepare()
	jpath := w.failedRun(t, t.TempDir())
	before := map[string]int{}
	for _, rb := range readJournal(t, jpath).Rollbacks {
		before[rb.ID] = rb.Attempts
	}
	w.enf.SetPolicy(without(t, policyOf(t, iam.DrillRunner, testTarget), iam.PutItem))
	r := w.Run("drill", "recover", jpath)
	w.enf.TakeDenials()
	out := r.Stdout + r.Stderr
	if r.Code != exitcode.Audit {
		t.Errorf("exit %d, want %d (the clear was made, its audit record was not)\n%s", r.Code, exitcode.Audit, out)
	}
	if strings.Contains(out, "already clear") || !strings.Contains(out, "UNAUDITED") || !strings.Contains(out, "RESTORED, NOT AUDITED: breaker#openai") {
		t.Errorf("the clear of openai reads as done and recorded, or not at all:\n%s", out)
	}
	j := readJournal(t, jpath)
	for _, rb := range j.Rollbacks {
		if rb.Subject != "breaker#openai" {
			continue
		}
		if rb.Status != drill.StatusUnaudited || rb.Attempts-before[rb.ID] != 1 || rb.Detail != "cleared, but its audit record was not written" ||
			!strings.Contains(rb.Error, "audit record not written") || strings.Contains(rb.Error, "--write-id") || !strings.Contains(rb.Error, "no audit repair can write it") {
			t.Errorf("openai rollback: status %q, %d attempt(s), detail %q, error %q; want unaudited, one attempt, the clear and its missing record (no repair: even the claim was denied)",
				rb.Status, rb.Attempts-before[rb.ID], rb.Detail, rb.Error)
		}
	}
	if rec := j.Recoveries[len(j.Recoveries)-1]; rec.OK || !strings.Contains(rec.Detail, "restored but not audited") {
		t.Errorf("recovery record %+v: want not ok, naming the unaudited rollback", rec)
	}
	w.enf.SetPolicy(nil)
	if r := w.Run("breaker", "get", "openai"); r.Code != exitcode.NotFound {
		t.Errorf("breaker get openai after recover: exit %d, want %d (cleared)\n%s%s", r.Code, exitcode.NotFound, r.Stdout, r.Stderr)
	}
	// Nothing is pending: a second recover does nothing, and so cannot
	// report the clear "already" done.
	if r := w.Run("drill", "recover", jpath); r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, "already clear") {
		t.Errorf("second recover: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

func readJournal(t *testing.T, path string) drill.Journal {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j drill.Journal
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return j
}
