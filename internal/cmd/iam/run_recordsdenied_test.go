package iam_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
)

// recordsDenied is the drill-runner policy without dynamodb:PutItem on
// audit records: a lever's change and its record are one transaction, and
// one denied item denies the whole call.
func recordsDenied(t *testing.T) *iam.Document {
	t.Helper()
	full := policyOf(t, iam.DrillRunner, testTarget)
	for i, st := range full.Statement {
		c, ok := st.Condition[iam.LeadingKeysCondition]
		if !ok || !slices.Equal(c["dynamodb:LeadingKeys"], []string{audit.Prefix + "*"}) || !slices.Contains(st.Action, iam.PutItem) {
			continue
		}
		return withoutAction(*full, i, iam.PutItem)
	}
	t.Fatalf("the drill-runner policy has no PutItem on %s*", audit.Prefix)
	return nil
}

// drill run whose rollback's record is denied (the drill-runner may delete
// the override, not write the record): the rollback's transaction is
// denied whole, so nothing changes. The rollback fails (exit 9, NOT
// RESTORED, with when the lever lapses), the drill's override is still in
// force, no clear is recorded, and nothing speaks of an unaudited change
// or an audit repair: there is no lever restored without its record.
func TestDrillRunWithAuditPutDeniedAtRollbackChangesNothing(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	w.enf.SetPolicy(nil)
	// The drill's last step makes the proxy refuse audit records from then
	// on: the force and its record land, the rollback's record does not.
	deny := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		w.enf.SetPolicy(recordsDenied(t))
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(deny.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "denied.yaml")
	src := "version: 1\nname: run-denied\ncontext: dev\ntimeout: 10m\nrollback_timeout: 2s\nsteps:\n" +
		"  - id: force\n    breaker.force-open: {dependency: openai, for: 5m, reason: iam run test}\n" +
		"  - id: deny-records\n    http:\n      url: " + deny.URL + "/deny\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, "journal.json")
	w.asRole(t, iam.DrillRunner)
	r := w.Run("drill", "run", file, "--journal", jpath)
	w.enf.TakeDenials()
	out := r.Stdout + r.Stderr
	if r.Code != exitcode.Rollback {
		t.Errorf("exit %d, want %d (the rollback changed nothing)\n%s", r.Code, exitcode.Rollback, out)
	}
	if !strings.Contains(out, "NOT RESTORED: breaker#openai") || strings.Contains(out, "NOT AUDITED") || strings.Contains(out, "audit repair") {
		t.Errorf("output does not say the lever is left as it was, or speaks of an unaudited change:\n%s", out)
	}
	j := readJournal(t, jpath)
	if j.RollbacksOK || j.ExitCode != exitcode.Rollback || len(j.Rollbacks) != 1 || j.Rollbacks[0].Status != drill.StatusFailed {
		t.Fatalf("journal rollbacks_ok %v, exit %d, rollbacks %+v; want false, 9, one failed", j.RollbacksOK, j.ExitCode, j.Rollbacks)
	}
	w.enf.SetPolicy(nil)
	w.MustRun(0, "breaker", "get", "openai")
	if l := w.MustRun(0, "audit", "list", "--subject", "breaker#openai", "-o", "json").Stdout; strings.Count(l, `"breaker.clear"`) != 0 {
		t.Errorf("a clear is recorded although none was made:\n%s", l)
	}
}
