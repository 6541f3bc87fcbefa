package breaker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

type forceOut struct {
	Results []struct {
		Action            string `json:"action"`
		AuditID           string `json:"audit_id"`
		ConfirmedByReread bool   `json:"confirmed_by_reread"`
	} `json:"results"`
}

func TestForceOpenWhoseAnswerIsLostIsConfirmedAndAuditedOnce(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	p.LoseNext("PutItem", 1, faultproxy.Reset) // the override's write; the audit append is the next
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	if !strings.Contains(r.Stdout, "Forced open openai") || !strings.Contains(r.Stdout, store.ConfirmedNote) {
		t.Fatalf("stdout does not say the write was confirmed:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	if p.Lost("PutItem") != 1 {
		t.Fatalf("the proxy lost %d PutItem answers, want 1", p.Lost("PutItem"))
	}
	if got := clitest.AuditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.force-open" {
		t.Fatalf("audit records on breaker#openai: %v, want one breaker.force-open", got)
	}
	e.MustRun(0, "breaker", "get", "openai")
}

func TestForceOpenOverwriteWhoseAnswerIsLostIsConfirmedAndAuditedOnce(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "first", "--for", "30m")
	p.LoseNext("PutItem", 1, faultproxy.Reset)
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "second", "--for", "30m", "--overwrite", "-o", "json")
	var out forceOut
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	if len(out.Results) != 1 || out.Results[0].Action != "replaced" || !out.Results[0].ConfirmedByReread || out.Results[0].AuditID == "" {
		t.Fatalf("results %+v, want one replaced, confirmed by re-read, with an audit id", out.Results)
	}
	if got := clitest.AuditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.force-open,breaker.force-open" {
		t.Fatalf("audit records on breaker#openai: %v, want two breaker.force-open", got)
	}
	if g := e.MustRun(0, "breaker", "get", "openai"); !strings.Contains(g.Stdout, "second") {
		t.Fatalf("breaker get does not show the replacement:\n%s", g.Stdout)
	}
}

func TestClearWhoseAnswerIsLostIsReportedClearedAndAuditedOnce(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	p.LoseNext("DeleteItem", 1, faultproxy.Reset)
	r := e.MustRun(0, "breaker", "clear", "openai", "-o", "json")
	var out struct {
		Results []struct {
			Action            string  `json:"action"`
			AuditID           *string `json:"audit_id"`
			ConfirmedByReread bool    `json:"confirmed_by_reread"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	if len(out.Results) != 1 || out.Results[0].Action != "cleared" || out.Results[0].AuditID == nil || !out.Results[0].ConfirmedByReread {
		t.Fatalf("clear after a lost delete answer printed %s, want cleared with an audit id, confirmed by re-read", r.Stdout)
	}
	if p.Lost("DeleteItem") != 1 {
		t.Fatalf("the proxy lost %d DeleteItem answers, want 1", p.Lost("DeleteItem"))
	}
	if got := clitest.AuditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.clear,breaker.force-open" {
		t.Fatalf("audit records on breaker#openai: %v, want force-open then clear", got)
	}
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")
}

func TestInterruptDuringTheAuditAppendExitsAudit(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	p.LoseNext("PutItem", 2, faultproxy.Withhold) // the audit append after the override's write
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() {
		done <- e.RunContext(ctx, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	}()
	p.WaitLost(t, "PutItem", 1)
	cancel() // SIGINT, as cmd/koshactl delivers it: the command's context ends
	r := <-done
	if r.Code != exitcode.Audit {
		t.Fatalf("exit %d, want %d (the override was written, its record was not)\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Audit, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "openai was forced open, but audit record may not have been written") {
		t.Fatalf("stderr does not say the override was written:\n%s", r.Stderr)
	}
	e.MustRun(0, "breaker", "get", "openai")
}

// interruptAuditAppend runs args, cancels it while the nth PutItem from now
// (an audit write) is withheld, and returns what it printed: exit 8.
func interruptAuditAppend(t *testing.T, e *clitest.Env, p *faultproxy.Proxy, nth int, args ...string) clitest.Result {
	t.Helper()
	lostBefore := p.Lost("PutItem")
	p.LoseNext("PutItem", nth, faultproxy.Withhold)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.RunContext(ctx, args...) }()
	p.WaitLost(t, "PutItem", lostBefore+1)
	cancel()
	r := <-done
	if r.Code != exitcode.Audit {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Audit, r.Stdout, r.Stderr)
	}
	return r
}

// dropRecords deletes subject's audit records of action, as if the
// interrupted append had never reached the store, and returns how many.
func dropRecords(t *testing.T, e *clitest.Env, p *faultproxy.Proxy, subject, action string) int {
	t.Helper()
	var doc struct {
		Items []audit.Record `json:"items"`
	}
	out := e.MustRun(0, "audit", "list", "--subject", subject, "--action", action, "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := dynamo.NewFromConfig(moto.Config(t, p.URL()), "kosha-control")
	for _, r := range doc.Items {
		pk := fmt.Sprintf("%s%013d#%s", audit.Prefix, r.Time.UnixMilli(), r.ID)
		if err := s.Delete(context.Background(), pk, store.IfPresent()); err != nil {
			t.Fatalf("delete %s: %v", pk, err)
		}
	}
	return len(doc.Items)
}

// Exit 8 prints a repair command that exists and works, for a force and a
// clear alike: run as printed it writes the missing record (exactly one);
// run again it writes none; run while the interrupted append had landed
// after all, it writes none.
func TestExitAuditPrintsARepairThatWritesTheMissingRecordOnce(t *testing.T) {
	for _, tc := range []struct {
		name, action string
		setup        []string
		nth          int // the PutItem of the record itself
		args         []string
		want         string
	}{
		{"force-open", "breaker.force-open", nil, 2,
			[]string{"breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m"}, "openai was forced open, but audit record may not have been written"},
		{"clear", "breaker.clear", []string{"breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m"}, 2,
			[]string{"breaker", "clear", "openai", "--reason", "provider recovered"}, "openai was cleared, but audit record may not have been written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, p := clitest.LostAnswerEnv(t)
			if tc.setup != nil {
				e.MustRun(0, tc.setup...)
			}
			r := interruptAuditAppend(t, e, p, tc.nth, tc.args...)
			if !strings.Contains(r.Stderr, tc.want) {
				t.Fatalf("stderr does not say the change was made:\n%s", r.Stderr)
			}
			args := clitest.RepairArgs(t, r.Stderr)
			if a := strings.Join(args, " "); !strings.HasPrefix(a, "--context dev audit repair breaker#openai --write-id ") {
				t.Fatalf("repair command %q", a)
			}
			// The withheld append reached the store: nothing to write.
			if out := e.MustRun(0, args...).Stdout; !strings.Contains(out, "Already recorded, nothing written: "+tc.action+" of breaker#openai") {
				t.Fatalf("repair after a landed append:\n%s", out)
			}
			if n := dropRecords(t, e, p, "breaker#openai", tc.action); n != 1 {
				t.Fatalf("%d %s records before the drop, want 1", n, tc.action)
			}
			if out := e.MustRun(0, args...).Stdout; !strings.Contains(out, "Wrote the missing audit record: "+tc.action+" of breaker#openai") {
				t.Fatalf("repair of a missing record:\n%s", out)
			}
			if out := e.MustRun(0, args...).Stdout; !strings.Contains(out, "Already recorded, nothing written") {
				t.Fatalf("second repair:\n%s", out)
			}
			var doc struct {
				Items []audit.Record `json:"items"`
			}
			out := e.MustRun(0, "audit", "list", "--subject", "breaker#openai", "--action", tc.action, "-o", "json").Stdout
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Items) != 1 || doc.Items[0].RepairedBy == "" || doc.Items[0].Reason == "" {
				t.Fatalf("records after two repairs: %+v, want exactly one, repaired, with the change's reason", doc.Items)
			}
		})
	}
}

// Issue 21 (probe): the audit append's own answer lost. The SDK's retry meets
// the append's attribute_not_exists(pk) condition on the record the first
// attempt wrote: that is this append landing, not a collision. The command
// exits 0 and the trail holds exactly one record (an exit 8 here would send
// the operator to write a second one).
func TestForceOpenWhoseAuditAnswerIsLostIsAuditedOnce(t *testing.T) {
	e, p := clitest.LostAnswerEnv(t)
	p.LoseNext("PutItem", 2, faultproxy.Reset) // the audit append after the override's write
	r := e.Run("breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0 (the override and its record were both written)\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if p.Lost("PutItem") != 1 {
		t.Fatalf("the proxy lost %d PutItem answers, want 1", p.Lost("PutItem"))
	}
	if got := clitest.AuditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.force-open" {
		t.Fatalf("audit records on breaker#openai: %v, want one breaker.force-open", got)
	}
}

// Issue 21 (probe): an interrupt while the audit append is in flight (the
// store applied it; the answer is held) printed "audit record not written",
// which is false here, and named nothing to check. The exit stays 8, and
// the error says the record may or may not be there and how to look.
func TestInterruptDuringTheAuditAppendSaysItsOutcomeIsUnknown(t *testing.T) {
	e, p := clitest.LostAnswerEnv(t)
	p.LoseNext("PutItem", 2, faultproxy.Withhold)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() {
		done <- e.RunContext(ctx, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	}()
	p.WaitLost(t, "PutItem", 1)
	cancel()
	r := <-done
	if r.Code != exitcode.Audit {
		t.Fatalf("exit %d, want %d\n%s", r.Code, exitcode.Audit, r.Stderr)
	}
	if strings.Contains(r.Stderr, "audit record not written") || !strings.Contains(r.Stderr, "may not have been written") ||
		!strings.Contains(r.Stderr, "koshactl audit list --subject breaker#openai") {
		t.Errorf("stderr does not say the record's outcome is unknown and how to check it:\n%s", r.Stderr)
	}
	// The record did land (the proxy applied it): exactly one.
	if got := clitest.AuditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.force-open" {
		t.Errorf("audit records on breaker#openai: %v, want one breaker.force-open", got)
	}
}
