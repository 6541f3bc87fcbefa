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
	w.MustRun(0, "ratelimit", "set", "--create", "agent-1", "--tokens", "7", "--reason", "setup")
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
// passes and calls exactly what iam.Commands() declares for it; with any one
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
	// Again, its clear's answer lost: settled by reading the clear's record.
	jpath = w.failedRun(t, dir)
	w.asRole(t, iam.DrillRunner)
	loseChange(w.proxy, isClear)
	got = union(got, w.run(t, "drill", "recover", jpath))
	w.proxy.LoseAnswers(nil)
	if d := sameNeeds(got, iam.Commands()["drill recover"]); d != "" {
		t.Errorf("drill recover: %s", d)
	}
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("drill recover as drill-runner: denied %v", d)
	}
	var actions []string
	for _, n := range iam.Commands()["drill recover"] {
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
// override and the clear's record are one transaction, denied whole, so
// nothing changes. The rollback fails (exit 9), the override is still in
// force and its rollback pending for the next recover, and nothing speaks
// of an unaudited change or an audit repair.
func TestDrillRecoverWithAuditPutDeniedChangesNothing(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	w.prepare()
	jpath := w.failedRun(t, t.TempDir())
	w.enf.SetPolicy(without(t, policyOf(t, iam.DrillRunner, testTarget), iam.PutItem))
	r := w.Run("drill", "recover", jpath)
	w.enf.TakeDenials()
	out := r.Stdout + r.Stderr
	if r.Code != exitcode.Rollback {
		t.Errorf("exit %d, want %d (the rollback changed nothing)\n%s", r.Code, exitcode.Rollback, out)
	}
	if !strings.Contains(out, "NOT RESTORED: breaker#openai") || strings.Contains(out, "NOT AUDITED") || strings.Contains(out, "audit repair") {
		t.Errorf("the rollback of openai reads as done, or speaks of an unaudited change:\n%s", out)
	}
	j := readJournal(t, jpath)
	for _, rb := range j.Rollbacks {
		if rb.Subject == "breaker#openai" && rb.Status != drill.StatusFailed {
			t.Errorf("openai rollback: status %q, error %q; want failed", rb.Status, rb.Error)
		}
	}
	w.enf.SetPolicy(nil)
	w.MustRun(0, "breaker", "get", "openai")
	// The rollback is pending: a recover allowed to write its records
	// clears the override, with its record.
	if r := w.Run("drill", "recover", jpath); r.Code != 0 {
		t.Errorf("second recover: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := w.Run("breaker", "get", "openai"); r.Code != exitcode.NotFound {
		t.Errorf("breaker get openai after the second recover: exit %d, want %d\n%s%s", r.Code, exitcode.NotFound, r.Stdout, r.Stderr)
	}
	if l := w.MustRun(0, "audit", "list", "--subject", "breaker#openai", "-o", "json").Stdout; strings.Count(l, `"breaker.clear"`) != 1 {
		t.Errorf("the audit log of openai, want one clear:\n%s", l)
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
