package breaker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// Two operators race `breaker force-open openai --overwrite` for 20
// rounds with answers dropped: each round the first operator's change
// lands and its answer is lost (a connection reset, or an HTTP 500 in
// rounds of their own), and the SDK's retry of it is held until the
// second operator's overwrite has landed, the order the issue met by
// chance in 5 of 40 rounds. The retry then meets another operator's
// override and its own record: the record, written in the change's
// transaction and never updated, settles it as landed. Every change that
// landed and was recorded exits 0 with the note that its answer was lost;
// every change that exits 0 is recorded exactly once; the override is the
// last writer's.
func TestOverwriteRaceWithLostAnswersExitsZeroForEveryChangeThatLanded(t *testing.T) {
	t.Parallel()
	e0, p := clitest.LostAnswerEnv(t)
	e0.Setenv("KOSHACTL_ACTOR", "op0@test")
	e1 := clitest.New(t, clitest.Parallel())
	e1.Setenv("KOSHACTL_ACTOR", "op1@test")
	e1.UseDynamoDB(p.URL(), "kosha-control")
	operators := []*clitest.Env{e0, e1}
	type result struct {
		Dependency        string `json:"dependency"`
		Action            string `json:"action"`
		AuditID           string `json:"audit_id"`
		ConfirmedByReread bool   `json:"confirmed_by_reread"`
	}
	const rounds = 20
	for round := range rounds {
		first, second := operators[round%2], operators[1-round%2]
		fault := faultproxy.Reset
		if round%4 >= 2 {
			fault = faultproxy.ServerError
		}
		reasons := [2]string{fmt.Sprintf("round %d first", round), fmt.Sprintf("round %d second", round)}
		force := func(reason string) []string {
			return []string{"breaker", "force-open", "openai", "--reason", reason, "--for", "30m", "--overwrite", "-o", "json"}
		}
		// The transaction that lands: in round 0 nothing is in force and
		// the force is written at the floor, unread (the first); after it,
		// that unread attempt is refused by the override in force, which
		// its refusal shows, and the overwrite decided on it is the second.
		landing := 1
		if round > 0 {
			landing = 2
		}
		p.LoseNext(clitest.Transact, landing, fault)
		p.LoseNext(clitest.Transact, landing+1, faultproxy.Hold) // the SDK's retry of it
		done := make(chan clitest.Result, 1)
		go func() { done <- first.Run(force(reasons[0])...) }()
		p.WaitHeld(t, clitest.Transact, round+1)
		rs := [2]clitest.Result{{}, second.Run(force(reasons[1])...)}
		p.Release()
		rs[0] = <-done

		recorded := map[string][]clitest.AuditRecord{}
		for _, rec := range recordsOn(t, e0, "breaker#openai") {
			recorded[rec.Reason] = append(recorded[rec.Reason], rec)
		}
		for i, r := range rs {
			recs := recorded[reasons[i]]
			if len(recs) > 1 {
				t.Fatalf("round %d (%s, %s): %d records of one change, want it recorded once", round, fault, reasons[i], len(recs))
			}
			if len(recs) == 1 && r.Code != exitcode.OK {
				t.Fatalf("round %d (%s): %q landed and was recorded (%s), and exits %d, want 0\nstdout:\n%s\nstderr:\n%s",
					round, fault, reasons[i], recs[0].ID, r.Code, r.Stdout, r.Stderr)
			}
			if r.Code != exitcode.OK {
				continue
			}
			if len(recs) != 1 {
				t.Fatalf("round %d (%s): %q exits 0 and has no record\nstdout:\n%s", round, fault, reasons[i], r.Stdout)
			}
			out := clitest.Decode[struct{ Results []result }](t, r.Stdout)
			if len(out.Results) != 1 || out.Results[0].AuditID != recs[0].ID {
				t.Fatalf("round %d: %q reports %+v, want its one record %s", round, reasons[i], out.Results, recs[0].ID)
			}
			if lost := i == 0; out.Results[0].ConfirmedByReread != lost {
				t.Errorf("round %d: %q confirmed_by_reread %v, want %v (its answer lost: %v)", round, reasons[i], out.Results[0].ConfirmedByReread, lost, lost)
			}
		}
		if rs[0].Code != exitcode.OK || rs[1].Code != exitcode.OK {
			t.Fatalf("round %d (%s): exits %d and %d, want both changes landed and 0 (the second overwrites the first)\nfirst:\n%s%s\nsecond:\n%s%s",
				round, fault, rs[0].Code, rs[1].Code, rs[0].Stdout, rs[0].Stderr, rs[1].Stdout, rs[1].Stderr)
		}
		got := clitest.Decode[struct {
			Reason string `json:"reason"`
		}](t, e0.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout)
		if got.Reason != reasons[1] {
			t.Fatalf("round %d: the override says %q, want the last writer's %q (the settled retry wrote nothing)", round, got.Reason, reasons[1])
		}
	}
	// In the table, the first operator's change says its answer was lost
	// and how it was settled (the second transaction lands: the first,
	// unread, is refused by the override in force).
	p.LoseNext(clitest.Transact, 2, faultproxy.ServerError)
	r := e0.MustRun(0, "breaker", "force-open", "openai", "--reason", "table", "--for", "30m", "--overwrite")
	if !strings.Contains(r.Stdout, store.ConfirmedNote) {
		t.Errorf("a change settled on its record does not say so:\n%s", r.Stdout)
	}
}

// recordsOn lists every record on subject (the rounds write more than
// audit list's default limit).
func recordsOn(t *testing.T, e *clitest.Env, subject string) []clitest.AuditRecord {
	t.Helper()
	var doc struct {
		Items []clitest.AuditRecord `json:"items"`
	}
	out := e.MustRun(0, "audit", "list", "--subject", subject, "--limit", "0", "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("audit list -o json: %v\n%s", err, out)
	}
	return doc.Items
}
