package clitest

// The tests of a change whose answer is lost (breaker's and ratelimit's): a
// CLI on a DynamoDB context whose endpoint is a fault proxy in front of
// moto, the faults that lose a change's answer (every change is one
// TransactWriteItems), and the audit actions recorded on a subject, so a
// test can tell a change confirmed and recorded once.

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Transact is the DynamoDB operation every change of the control table is
// (store.Apply): the one a test loses the answer of.
const Transact = "TransactWriteItems"

// LostAnswerEnv is a CLI on a DynamoDB context whose endpoint is a fault proxy in
// front of moto, with the table created; it sets nothing in the process,
// so its tests may run in parallel.
func LostAnswerEnv(t *testing.T) (*Env, *faultproxy.Proxy) {
	t.Helper()
	p := faultproxy.Start(t, moto.Start(t))
	e := New(t, Parallel())
	e.UseDynamoDB(p.URL(), "kosha-control")
	e.MustRun(0, "store", "init")
	return e, p
}

// RunInterrupted runs args and interrupts it (its context canceled, as
// cmd/koshactl does on SIGINT) while its next change is in flight: held by
// fault, [faultproxy.Withhold] (the store applied it, the answer is held)
// or [faultproxy.Stall] (the store never saw it). then, when set, runs
// just before the interrupt (to arrange what comes after it).
func RunInterrupted(t *testing.T, e *Env, p *faultproxy.Proxy, fault faultproxy.Fault, then func(), args ...string) Result {
	t.Helper()
	return RunInterruptedAt(t, e, p, fault, 1, then, args...)
}

// RunInterruptedAt is [RunInterrupted] holding its k-th transaction (a
// change over a lever in force: the first, planned at the floor, is
// refused by what is there; the second writes).
func RunInterruptedAt(t *testing.T, e *Env, p *faultproxy.Proxy, fault faultproxy.Fault, k int, then func(), args ...string) Result {
	t.Helper()
	lost, stalled := p.Lost(Transact), p.Stalled(Transact)
	p.LoseNext(Transact, k, fault)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- e.RunContext(ctx, args...) }()
	if fault == faultproxy.Stall {
		p.WaitStalled(t, Transact, stalled+1)
	} else {
		p.WaitLost(t, Transact, lost+1)
	}
	if then != nil {
		then()
	}
	cancel()
	return <-done
}

// Unreachable makes the store answer nothing from now on for the next
// change and the read that would settle it: every attempt the SDK makes
// ([awsconf.DefaultMaxAttempts]) of the next TransactWriteItems and of the
// next GetItem loses its answer (the first attempt of the change is
// applied: the store took it, and nobody can hear so).
func Unreachable(p *faultproxy.Proxy) {
	for n := 1; n <= awsconf.DefaultMaxAttempts; n++ {
		p.LoseNext(Transact, n, faultproxy.Reset)
		p.LoseNext("GetItem", n, faultproxy.Reset)
	}
}

// AuditActions lists the actions of the audit records on subject, sorted
// (the fake clock stamps every record in the same millisecond).
func AuditActions(t *testing.T, e *Env, subject string) []string {
	t.Helper()
	var acts []string
	for _, r := range AuditRecords(t, e, subject) {
		acts = append(acts, r.Action)
	}
	sort.Strings(acts)
	return acts
}

// AuditRecord is what a test checks of one record `audit list -o json`
// shows.
type AuditRecord struct {
	ID      string `json:"id"`
	Action  string `json:"action"`
	Subject string `json:"subject"`
	Actor   string `json:"actor"`
	Reason  string `json:"reason"`
	// Change is the token of the change that wrote the record.
	Change string `json:"change"`
}

// AuditRecords lists the audit records on subject that `audit list -o
// json` shows (its default limit holds a test's few records).
func AuditRecords(t *testing.T, e *Env, subject string) []AuditRecord {
	t.Helper()
	var doc struct {
		Items []AuditRecord `json:"items"`
	}
	out := e.MustRun(0, "audit", "list", "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("audit list -o json: %v\n%s", err, out)
	}
	var recs []AuditRecord
	for _, r := range doc.Items {
		if r.Subject == subject {
			recs = append(recs, r)
		}
	}
	return recs
}
