package iam_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
)

// recordsDenied is the drill-runner policy without dynamodb:PutItem on
// audit records, but with it on the claims a clear writes first (their
// prefix is inside the records'): a clear lands, its claim is stored, its
// record is refused.
func recordsDenied(t *testing.T) *iam.Document {
	t.Helper()
	full := policyOf(t, iam.DrillRunner, testTarget)
	for i, st := range full.Statement {
		c, ok := st.Condition[iam.LeadingKeysCondition]
		if !ok || !slices.Equal(c["dynamodb:LeadingKeys"], []string{audit.Prefix + "*"}) || !slices.Contains(st.Action, iam.PutItem) {
			continue
		}
		doc := withoutAction(*full, i, iam.PutItem)
		doc.Statement = append(doc.Statement, iam.Statement{Sid: "ClaimsOnly", Effect: "Allow", Action: []string{iam.PutItem}, Resource: st.Resource,
			Condition: map[string]map[string][]string{iam.LeadingKeysCondition: {"dynamodb:LeadingKeys": {audit.ClaimPrefix + "*"}}}})
		return doc
	}
	t.Fatalf("the drill-runner policy has no PutItem on %s*", audit.Prefix)
	return nil
}

// drill run whose rollback's clear lands (DeleteItem granted, the claim
// stored) but whose audit record is refused: the lever is restored, its
// record is what is missing. The journal says unaudited and rollbacks_ok,
// the run exits 8 (not 9: no lever is left pulled), the output says
// RESTORED, NOT AUDITED with the audit repair command, never NOT
// RESTORED, the override is really gone, and the printed repair writes
// the record.
func TestDrillRunWithAuditPutDeniedAtRollbackSaysRestoredNotAudited(t *testing.T) {
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
	file := filepath.Join(dir, "unaudited.yaml")
	src := "version: 1\nname: run-unaudited\ncontext: dev\ntimeout: 10m\nsteps:\n" +
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
	if r.Code != exitcode.Audit {
		t.Errorf("exit %d, want %d (the clear was made, its audit record was not)\n%s", r.Code, exitcode.Audit, out)
	}
	if strings.Contains(out, "NOT RESTORED") || strings.Contains(out, "WERE NOT RESTORED") || strings.Contains(out, "already clear") {
		t.Errorf("the restored lever reads as left pulled, or as cleared by someone else:\n%s", out)
	}
	repair := regexp.MustCompile(`RESTORED, NOT AUDITED: breaker#openai \(unaudited, step force\): openai was cleared, but audit record not written: .*; ` +
		`write it with: koshactl --context 'dev' audit repair 'breaker#openai' --write-id '([0-9a-f]+)'\n`).FindStringSubmatch(r.Stdout)
	if repair == nil {
		t.Fatalf("stdout does not say RESTORED, NOT AUDITED with the repair:\n%s", out)
	}
	j := readJournal(t, jpath)
	if !j.RollbacksOK || j.ExitCode != exitcode.Audit || len(j.Rollbacks) != 1 {
		t.Fatalf("journal rollbacks_ok %v, exit %d, %d rollback(s); want true, 8, one", j.RollbacksOK, j.ExitCode, len(j.Rollbacks))
	}
	if rb := j.Rollbacks[0]; rb.Status != drill.StatusUnaudited || rb.Attempts != 1 || rb.Detail != "cleared, but its audit record was not written" {
		t.Errorf("rollback %+v: want unaudited after one attempt, the clear made", rb)
	}
	w.enf.SetPolicy(nil)
	if r := w.Run("breaker", "get", "openai"); r.Code != exitcode.NotFound {
		t.Errorf("breaker get openai after the run: exit %d, want %d (cleared)\n%s%s", r.Code, exitcode.NotFound, r.Stdout, r.Stderr)
	}
	// The command printed writes the missing record.
	w.MustRun(0, "--context", "dev", "audit", "repair", "breaker#openai", "--write-id", repair[1])
	if l := w.MustRun(0, "audit", "list", "--subject", "breaker#openai", "-o", "json").Stdout; strings.Count(l, `"breaker.clear"`) != 1 {
		t.Errorf("after the repair, the audit log of openai:\n%s", l)
	}
}
