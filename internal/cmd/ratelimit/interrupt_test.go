package ratelimit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// runInterrupted runs args, cancels it (SIGINT, as cmd/koshactl delivers it)
// once the next PutItem is held by fault, and returns what it printed.
func runInterrupted(t *testing.T, e *clitest.Env, p *faultproxy.Proxy, fault faultproxy.Fault, args ...string) clitest.Result {
	t.Helper()
	lost, stalled := p.Lost("PutItem"), p.Stalled("PutItem")
	p.LoseNext("PutItem", 1, fault)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.RunContext(ctx, args...) }()
	if fault == faultproxy.Stall {
		p.WaitStalled(t, "PutItem", stalled+1)
	} else {
		p.WaitLost(t, "PutItem", lost+1)
	}
	cancel()
	return <-done
}

// Each bucket verb interrupted while its write is in flight (moto applied
// it, the answer is held): the command says the change was made, confirmed
// by a re-read, exits 8 (its record was stopped by the interrupt) and prints
// a repair that writes exactly one record; run again, none.
func TestBucketChangeInterruptedInFlightIsConfirmedAndItsRepairRecordsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args         []string
		line, action string
	}{
		{[]string{"reset", "alice"}, "Reset alice", "ratelimit.reset"},
		{[]string{"set", "alice", "--tokens", "5"}, "Set alice", "ratelimit.set"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			t.Parallel()
			e, p := clitest.LostAnswerEnv(t)
			e.MustRun(0, "ratelimit", "drain", "alice")
			r := runInterrupted(t, e, p, faultproxy.Withhold, append([]string{"ratelimit"}, append(tc.args, "--reason", "incident")...)...)
			if r.Code != exitcode.Audit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Audit, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, tc.line) || !strings.Contains(r.Stdout, store.ConfirmedNote) ||
				!strings.Contains(r.Stderr, "bucket alice was changed") {
				t.Fatalf("output does not say the change was made and confirmed:\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
			}
			args := clitest.RepairArgs(t, r.Stderr)
			if a := strings.Join(args, " "); !strings.HasPrefix(a, "--context dev audit repair rl#alice --write-id ") {
				t.Fatalf("repair command %q", a)
			}
			if got := clitest.AuditActions(t, e, "rl#alice"); strings.Join(got, ",") != "ratelimit.drain" {
				t.Fatalf("records before the repair: %v, want the drain's alone", got)
			}
			if out := e.MustRun(0, args...).Stdout; !strings.Contains(out, "Wrote the missing audit record: "+tc.action+" of rl#alice") {
				t.Fatalf("repair:\n%s", out)
			}
			if out := e.MustRun(0, args...).Stdout; !strings.Contains(out, "Already recorded, nothing written") {
				t.Fatalf("second repair:\n%s", out)
			}
			if got := clitest.AuditActions(t, e, "rl#alice"); strings.Join(got, ",") != "ratelimit.drain,"+tc.action {
				t.Fatalf("records after two repairs: %v, want the drain's and exactly one %s", got, tc.action)
			}
		})
	}
}

// Interrupted before the write reached the store: the command says nothing
// was changed and exits 130, with no record and no repair.
func TestBucketChangeInterruptedBeforeTheStoreSaysNothingChanged(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	e.MustRun(0, "ratelimit", "drain", "alice")
	r := runInterrupted(t, e, p, faultproxy.Stall, "ratelimit", "reset", "alice", "--reason", "incident")
	if r.Code != exitcode.Interrupted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Interrupted, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "did not land: nothing was changed") || strings.Contains(r.Stderr, "audit repair") {
		t.Fatalf("stderr does not say nothing was changed:\n%s", r.Stderr)
	}
	if got := clitest.AuditActions(t, e, "rl#alice"); strings.Join(got, ",") != "ratelimit.drain" {
		t.Fatalf("records: %v, want the drain's alone", got)
	}
}

// A repair of a bucket change that was never claimed exits 3 and writes
// nothing; a malformed rl# subject is a usage error.
func TestAuditRepairOfAnUnclaimedBucketChangeExitsNotFound(t *testing.T) {
	t.Parallel()
	e, _ := clitest.LostAnswerEnv(t)
	e.MustRun(exitcode.NotFound, "audit", "repair", "rl#alice", "--write-id", strings.Repeat("a", 32))
	e.MustRun(exitcode.Usage, "audit", "repair", "rl#al ice", "--write-id", strings.Repeat("a", 32))
}
