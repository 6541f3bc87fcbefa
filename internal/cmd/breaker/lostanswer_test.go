package breaker_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// lostAnswer is one way a change's answer goes missing through the real
// command: the connection reset after the store applied it (the SDK's
// retry settles it), or the command interrupted while the change is in
// flight, applied with its answer withheld or stalled before the store saw
// it (the change is re-issued on a context of its own).
type lostAnswer struct {
	fault     faultproxy.Fault
	interrupt bool
}

func (l lostAnswer) String() string {
	if l.interrupt {
		return l.fault.String() + "+interrupt"
	}
	return l.fault.String()
}

var lostAnswers = []lostAnswer{{faultproxy.Reset, false}, {faultproxy.Withhold, true}, {faultproxy.Stall, true}}

// run runs args with the answer of its k-th transaction, the one that
// writes its change, lost this way.
func (l lostAnswer) run(t *testing.T, e *clitest.Env, p *faultproxy.Proxy, k int, args ...string) clitest.Result {
	t.Helper()
	if l.interrupt {
		return clitest.RunInterruptedAt(t, e, p, l.fault, k, nil, args...)
	}
	lost := p.Lost(clitest.Transact)
	p.LoseNext(clitest.Transact, k, l.fault)
	r := e.Run(args...)
	if p.Lost(clitest.Transact) != lost+1 {
		t.Fatalf("the proxy lost no answer of %v", args)
	}
	return r
}

// Force, overwrite and clear, each with its answer lost every way: exit 0,
// the change said and confirmed, exactly one record of it, and the store
// holding what the command said. Never "not audited", never a repair: the
// record is written in the change's own transaction.
func TestLeverWhoseAnswerIsLostIsConfirmedWithExactlyOneRecord(t *testing.T) {
	t.Parallel()
	for _, lost := range lostAnswers {
		t.Run(lost.String(), func(t *testing.T) {
			t.Parallel()
			e, p := clitest.LostAnswerEnv(t)
			// The overwrite's first transaction, planned at the floor, is
			// refused by the override in force: its second writes.
			steps := []struct {
				args    []string
				writes  int
				said    string
				records string
			}{
				{[]string{"breaker", "force-open", "openai", "--reason", "first", "--for", "30m"}, 1,
					"Forced open openai", "breaker.force-open"},
				{[]string{"breaker", "force-open", "openai", "--reason", "second", "--for", "30m", "--overwrite"}, 2,
					"Replaced override, forced open openai", "breaker.force-open,breaker.force-open"},
				{[]string{"breaker", "clear", "openai", "--reason", "over"}, 1,
					"Cleared override on openai", "breaker.clear,breaker.force-open,breaker.force-open"},
			}
			for _, st := range steps {
				r := lost.run(t, e, p, st.writes, st.args...)
				if r.Code != exitcode.OK {
					t.Fatalf("%s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", st.args[1], r.Code, r.Stdout, r.Stderr)
				}
				if !strings.Contains(r.Stdout, st.said) || !strings.Contains(r.Stdout, "  "+store.ConfirmedNote+"\n") {
					t.Fatalf("%s: stdout does not say %q, confirmed:\n%s\nstderr:\n%s", st.args[1], st.said, r.Stdout, r.Stderr)
				}
				for _, banned := range []string{"repair", "not audited", "may not have been written", "unknown"} {
					if strings.Contains(r.Stdout+r.Stderr, banned) {
						t.Fatalf("%s: the output says %q:\n%s\n%s", st.args[1], banned, r.Stdout, r.Stderr)
					}
				}
				if got := strings.Join(clitest.AuditActions(t, e, "breaker#openai"), ","); got != st.records {
					t.Fatalf("after %s: records on breaker#openai %s, want %s (each change exactly once)", st.args[1], got, st.records)
				}
			}
			e.MustRun(exitcode.NotFound, "breaker", "get", "openai")
		})
	}
}

// The JSON of a confirmed change names the record the change wrote: the
// one record there is, written by the change's own token.
func TestConfirmedChangeNamesTheRecordItWrote(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	type result struct {
		Action            string `json:"action"`
		AuditID           string `json:"audit_id"`
		ConfirmedByReread bool   `json:"confirmed_by_reread"`
	}
	for _, st := range []struct {
		args   []string
		action string
	}{
		{[]string{"breaker", "force-open", "openai", "--reason", "incident", "--for", "30m", "-o", "json"}, "forced"},
		{[]string{"breaker", "clear", "openai", "--reason", "over", "-o", "json"}, "cleared"},
	} {
		p.LoseNext(clitest.Transact, 1, faultproxy.Reset)
		out := clitest.Decode[struct{ Results []result }](t, e.MustRun(0, st.args...).Stdout)
		if len(out.Results) != 1 || out.Results[0].Action != st.action || !out.Results[0].ConfirmedByReread {
			t.Fatalf("%s: results %+v, want one %s, confirmed", st.args[1], out.Results, st.action)
		}
		found := 0
		for _, rec := range clitest.AuditRecords(t, e, "breaker#openai") {
			if rec.ID == out.Results[0].AuditID {
				found++
			}
		}
		if found != 1 {
			t.Fatalf("%s: audit_id %q names %d records, want the one the change wrote", st.args[1], out.Results[0].AuditID, found)
		}
	}
}

// A store that answers nothing once the change is sent, neither to the
// change nor to the read that would settle it: the one outcome koshactl
// cannot tell. Exit 8, one line saying so and naming the command that
// shows what the store holds, nothing claimed on stdout, for a force and a
// clear. The change and its record landed together or not at all: here
// (the store took the first attempt) together.
func TestUnreachableStoreIsAnUnknownOutcomeInOneLine(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	for _, st := range []struct {
		args    []string
		records string
	}{
		{[]string{"breaker", "force-open", "openai", "--reason", "incident", "--for", "30m"}, "breaker.force-open"},
		{[]string{"breaker", "clear", "openai", "--reason", "over"}, "breaker.clear,breaker.force-open"},
	} {
		clitest.Unreachable(p)
		r := e.Run(st.args...)
		if r.Code != exitcode.Unknown {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", st.args[1], r.Code, exitcode.Unknown, r.Stdout, r.Stderr)
		}
		if r.Stdout != "" {
			t.Errorf("%s: stdout claims a result of a change whose outcome is unknown:\n%s", st.args[1], r.Stdout)
		}
		errLines := errorLines(r.Stderr)
		if len(errLines) != 1 || !strings.Contains(errLines[0], "outcome") || !strings.Contains(errLines[0], "unknown") ||
			!strings.Contains(errLines[0], "koshactl breaker get openai") {
			t.Fatalf("%s: stderr does not say, in one line, that the outcome is unknown and how to check:\n%s", st.args[1], r.Stderr)
		}
		for _, banned := range []string{"repair", "audit record", "not audited"} {
			if strings.Contains(r.Stderr, banned) {
				t.Errorf("%s: stderr says %q:\n%s", st.args[1], banned, r.Stderr)
			}
		}
		if got := strings.Join(clitest.AuditActions(t, e, "breaker#openai"), ","); got != st.records {
			t.Fatalf("after %s: records %s, want %s: the change landed with its record", st.args[1], got, st.records)
		}
	}
	// -o json lists the lever too, as unknown, and claims no result.
	clitest.Unreachable(p)
	r := e.Run("breaker", "force-open", "openai", "--reason", "again", "--for", "30m", "--overwrite", "-o", "json")
	doc := clitest.Decode[struct {
		Results    *[]any `json:"results"`
		NotWritten []struct {
			Target  string `json:"target"`
			Outcome string `json:"outcome"`
			Why     string `json:"why"`
		} `json:"not_written"`
	}](t, r.Stdout)
	if r.Code != exitcode.Unknown || doc.Results == nil || len(*doc.Results) != 0 || len(doc.NotWritten) != 1 ||
		doc.NotWritten[0].Target != "openai" || doc.NotWritten[0].Outcome != "unknown" || !strings.Contains(doc.NotWritten[0].Why, "koshactl breaker get openai") {
		t.Fatalf("-o json of an unknown outcome: exit %d, want %d, results [] and openai unknown with the command that tells\n%s", r.Code, exitcode.Unknown, r.Stdout)
	}
}

// errorLines returns stderr's lines but the "acted on" line every change
// prints.
func errorLines(stderr string) []string {
	var out []string
	for l := range strings.Lines(stderr) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "acted on context") {
			out = append(out, l)
		}
	}
	return out
}
