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

const transact = "TransactWriteItems"

// runInterrupted runs args, cancels it (SIGINT, as cmd/koshactl delivers it)
// once the next TransactWriteItems is held by fault (after running then,
// when set), and returns what it printed.
func runInterrupted(t *testing.T, e *clitest.Env, p *faultproxy.Proxy, fault faultproxy.Fault, then func(), args ...string) clitest.Result {
	t.Helper()
	lost, stalled := p.Lost(transact), p.Stalled(transact)
	p.LoseNext(transact, 1, fault)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.RunContext(ctx, args...) }()
	if fault == faultproxy.Stall {
		p.WaitStalled(t, transact, stalled+1)
	} else {
		p.WaitLost(t, transact, lost+1)
	}
	if then != nil {
		then()
	}
	cancel()
	return <-done
}

// Each bucket verb interrupted while its change is in flight, whether the
// store applied it (the answer held) or never saw it (the request stalled):
// the change is re-issued under its token and settled, so the command says
// the change was made and confirmed, exits 0, and the bucket's one record
// was written with it. No repair is named.
func TestBucketChangeInterruptedInFlightIsConfirmedWithOneRecord(t *testing.T) {
	t.Parallel()
	for _, fault := range []faultproxy.Fault{faultproxy.Withhold, faultproxy.Stall} {
		for _, tc := range []struct {
			args         []string
			line, action string
		}{
			{[]string{"reset", "alice"}, "Reset alice", "ratelimit.reset"},
			{[]string{"set", "alice", "--tokens", "5"}, "Set alice", "ratelimit.set"},
		} {
			t.Run(fault.String()+"/"+tc.args[0], func(t *testing.T) {
				t.Parallel()
				e, p := clitest.LostAnswerEnv(t)
				e.MustRun(0, "ratelimit", "drain", "--create", "alice")
				r := runInterrupted(t, e, p, fault, nil, append([]string{"ratelimit"}, append(tc.args, "--reason", "incident")...)...)
				if r.Code != exitcode.OK {
					t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
				}
				if !strings.Contains(r.Stdout, tc.line) || !strings.Contains(r.Stdout, store.ConfirmedNote) {
					t.Fatalf("output does not say the change was made and confirmed:\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
				}
				if strings.Contains(r.Stderr, "repair") || strings.Contains(r.Stderr, "audit") {
					t.Fatalf("stderr names an audit repair:\n%s", r.Stderr)
				}
				if got := clitest.AuditActions(t, e, "rl#alice"); strings.Join(got, ",") != "ratelimit.drain,"+tc.action {
					t.Fatalf("records: %v, want the drain's and exactly one %s", got, tc.action)
				}
			})
		}
	}
}

// Interrupted in flight with the store unreachable after: the re-issue and
// the settling read both fail, so the command says, in one line, that the
// outcome is unknown and how to check it, and exits 8 (not 130).
func TestBucketChangeWithTheStoreUnreachableSaysTheOutcomeIsUnknown(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	e.MustRun(0, "ratelimit", "drain", "--create", "alice")
	// Once the change is held: its re-issue, the settling read, and the
	// SDK's retries of each, all lose their answers.
	unreachable := func() {
		for n := 1; n <= 3; n++ {
			p.LoseNext(transact, n, faultproxy.Reset)
			p.LoseNext("GetItem", n, faultproxy.Reset)
		}
	}
	r := runInterrupted(t, e, p, faultproxy.Withhold, unreachable, "ratelimit", "reset", "alice", "--reason", "incident")
	if r.Code != exitcode.Unknown {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Unknown, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "outcome of the change is unknown") || !strings.Contains(r.Stderr, "koshactl ratelimit get alice") ||
		strings.Contains(r.Stderr, "repair") || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 1 {
		t.Fatalf("stderr does not say, in one line, that the outcome is unknown and how to check:\n%s", r.Stderr)
	}
}
