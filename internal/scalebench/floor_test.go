package scalebench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// change is one lever command of the floor's tests and benchmark: the
// requests and round trips it may take through the link, and the
// exit code it ends with. setup runs first, uncounted (the state the
// change meets).
type change struct {
	name                   string
	setup                  [][]string
	args                   []string
	code                   int
	maxRequests, maxRounds int
	// dep is the dependency the benchmark clears after each run (""
	// the last argument's).
	dep string
}

// forceArgs forces dep open as actor.
func forceArgs(dep string) []string {
	return []string{"breaker", "force-open", "--reason", "bench", "--allow-unknown", "--for", "30m", dep}
}

// floorChanges are the levers held to the floor: a force with
// nothing in force is one TransactWriteItems; one that meets an override
// someone else holds is that same one request, refused in its words (the
// refusal returns the item); a change that must read (a clear: what is
// there decides what is written) reads and writes; a force under a
// policy is refused by the policy's check and decided on the policy the
// refusal returned: two requests, as the read and the write were.
//
// clear --all is its scan with the table's policy read beside it, then the
// transaction (which checks the policy is still absent).
//
// apply of a window in force is two round trips whatever the table holds:
// the overrides (the lists index's query beside the batch read of the
// known dependencies, the table's policy and the window's request), then
// the one transaction; under a policy the same three requests. Another
// file's window in force costs nothing more (its override is not this
// file's, whatever its records say, so they are not read); the file's own
// window, applied earlier, costs the read of its override's records (the
// one round that cannot be folded: what to read is what the first round
// found), and nothing is written.
func floorChanges(policyFile, leversFile, otherFile string) []change {
	apply := []string{"apply", "-f", leversFile}
	return []change{
		{name: "force-open-nothing-in-force", args: forceArgs("floor-a"), maxRequests: 1, maxRounds: 1},
		{name: "force-open-held-by-another", setup: [][]string{forceArgs("floor-b")}, args: forceArgs("floor-b"), code: 4, maxRequests: 1, maxRounds: 1},
		{name: "clear", setup: [][]string{forceArgs("floor-c")}, args: []string{"breaker", "clear", "--reason", "bench", "floor-c"}, maxRequests: 2, maxRounds: 2},
		{name: "force-open-under-a-policy", setup: [][]string{{"policy", "set", policyFile, "--reason", "bench"}}, args: forceArgs("floor-d"), maxRequests: 2, maxRounds: 2},
		{name: "clear-all", setup: [][]string{forceArgs("floor-e"), forceArgs("floor-f")}, args: []string{"breaker", "clear", "--all", "--reason", "bench"},
			maxRequests: 3, maxRounds: 2, dep: "floor-e"},
		{name: "apply-a-window-in-force", args: apply, maxRequests: 3, maxRounds: 2, dep: "screening-sim"},
		{name: "apply-under-a-policy", setup: [][]string{{"policy", "set", policyFile, "--reason", "bench"}}, args: apply, maxRequests: 3, maxRounds: 2, dep: "screening-sim"},
		{name: "apply-beside-another-files-window", setup: [][]string{{"apply", "-f", otherFile}}, args: apply, maxRequests: 3, maxRounds: 2, dep: "screening-sim"},
		{name: "apply-its-own-window-applied-earlier", setup: [][]string{apply}, args: apply, maxRequests: 5, maxRounds: 2, dep: "screening-sim"},
	}
}

// allowAll is a policy that lets every lever through.
const allowAll = `@id("allow-all")
permit (principal, action, resource);
`

// floorTable is a fresh table for the floor's changes, behind the counter,
// a link of rtt and the waves counter; each change runs on its own.
func floorTable(tb testing.TB, name string, rtt time.Duration) (link *waves, table string) {
	tb.Helper()
	s := dynamo.NewFromConfig(moto.Config(tb, server), name)
	if _, err := s.Init(context.Background()); err != nil {
		tb.Fatal(err)
	}
	c := newCounter(tb, server)
	return newWaves(tb, latencyLink(tb, c.url, rtt)), s.Table()
}

// windowFile is a levers file whose one window (of screening-sim) is in force
// at the tests' clock.
func windowFile(tb testing.TB) string {
	path := tb.TempDir() + "/levers.yaml"
	start := now.Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	if err := os.WriteFile(path, []byte("version: 1\ncontext: dev\nwindows:\n  - {dependency: screening-sim, reason: bench, start: "+start+", duration: 1h}\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// otherWindowFile is another levers file (vendor) whose one window (of
// openai) is in force at the tests' clock.
func otherWindowFile(tb testing.TB) string {
	path := tb.TempDir() + "/vendor.yaml"
	start := now.Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	if err := os.WriteFile(path, []byte("version: 1\ncontext: dev\nname: vendor\nwindows:\n  - {dependency: openai, reason: bench, start: "+start+", duration: 1h}\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

func policyFile(tb testing.TB) string {
	path := tb.TempDir() + "/allow.cedar"
	if err := os.WriteFile(path, []byte(allowAll), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestLeversAtTheFloor holds each lever command to its requests and round
// trips to the store (counted, not timed, through a [countedRTT] link).
func TestLeversAtTheFloor(t *testing.T) {
	for i, ch := range floorChanges(policyFile(t), windowFile(t), otherWindowFile(t)) {
		w, table := floorTable(t, fmt.Sprintf("floor-test-%d", i), countedRTT)
		e := cli(t, w.url, table)
		for _, s := range ch.setup {
			e.Clock.Advance(time.Second)
			e.Setenv("KOSHACTL_ACTOR", "other@bench") // someone else's override
			r := e.Run(s...)
			e.Setenv("KOSHACTL_ACTOR", "tester@test")
			if r.Code != 0 {
				t.Fatalf("%s: setup %v: exit %d: %s", ch.name, s, r.Code, r.Stderr)
			}
		}
		w.reset()
		r := e.Run(ch.args...)
		if r.Code != ch.code {
			t.Fatalf("%s: exit %d, want %d: %s", ch.name, r.Code, ch.code, r.Stderr)
		}
		requests, rounds := w.counts()
		t.Logf("%s: %d requests in %d round trips", ch.name, requests, rounds)
		if requests > ch.maxRequests || rounds > ch.maxRounds {
			t.Errorf("%s: %d requests in %d round trips, want at most %d in %d", ch.name, requests, rounds, ch.maxRequests, ch.maxRounds)
		}
		if ch.code == 4 && !strings.Contains(r.Stderr, "other@bench") {
			t.Errorf("%s: the conflict does not name who holds it: %s", ch.name, r.Stderr)
		}
	}
}

// BenchmarkLeversAtTheFloor reports, for each lever command of
// [floorChanges], the requests it sent through the 50 ms link
// (requests/op) and the round trips they took (round-trips/op), each
// command on the state its setup left (undone, uncounted, after it); a
// command over its bounds fails the benchmark.
func BenchmarkLeversAtTheFloor(b *testing.B) {
	for i, ch := range floorChanges(policyFile(b), windowFile(b), otherWindowFile(b)) {
		b.Run(ch.name, func(b *testing.B) {
			w, table := floorTable(b, fmt.Sprintf("floor-bench-%d-%d", i, leverTables.Add(1)), timedRTT)
			e := cli(b, w.url, table)
			var requests, rounds, n int
			for b.Loop() {
				b.StopTimer()
				e.Clock.Advance(time.Second)
				for _, s := range ch.setup {
					e.Setenv("KOSHACTL_ACTOR", "other@bench")
					r := e.Run(s...)
					e.Setenv("KOSHACTL_ACTOR", "tester@test")
					if r.Code != 0 {
						b.Fatalf("setup %v: exit %d: %s", s, r.Code, r.Stderr)
					}
				}
				w.reset()
				b.StartTimer()
				r := e.Run(ch.args...)
				b.StopTimer()
				if r.Code != ch.code {
					b.Fatalf("exit %d, want %d: %s", r.Code, ch.code, r.Stderr)
				}
				q, rt := w.counts()
				requests, rounds, n = requests+q, max(rounds, rt), n+1
				// Undo what the command and its setup left, uncounted.
				e.Setenv("KOSHACTL_ACTOR", "other@bench")
				dep := ch.dep
				if dep == "" {
					dep = ch.args[len(ch.args)-1]
				}
				{
					if r := e.Run("breaker", "clear", "--allow-unknown", "--reason", "undo", dep); r.Code != 0 {
						b.Fatalf("undo: %s", r.Stderr)
					}
				}
				e.Setenv("KOSHACTL_ACTOR", "tester@test")
				b.StartTimer()
			}
			b.ReportMetric(float64(requests)/float64(n), "requests/op")
			b.ReportMetric(float64(rounds), "round-trips/op")
			if requests/n > ch.maxRequests || rounds > ch.maxRounds {
				b.Errorf("%d requests in %d round trips, want at most %d in %d", requests/n, rounds, ch.maxRequests, ch.maxRounds)
			}
		})
	}
}

// TestRequestListSendsNoScan lists the pending change requests of a table
// holding one (a force four eyes hold), a canceled one and a review: the
// lists index's partition (with --all the open and closed ones at once),
// then one batch read of what they show (the items again, their proofs,
// the closed markers): at most three requests and two round trips
// (through a [countedRTT] link), and no Scan.
func TestRequestListSendsNoScan(t *testing.T) {
	s := dynamo.NewFromConfig(moto.Config(t, server), "request-list")
	if _, err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := newCounter(t, server)
	w := newWaves(t, latencyLink(t, c.url, countedRTT))
	e := cli(t, w.url, s.Table())
	if r := e.Run("policy", "set", "../../docs/policies/four-eyes.cedar", "--reason", "bench"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	if r := e.Run(forceArgs("openai")...); r.Code != 12 {
		t.Fatalf("force under four eyes: exit %d, want 12 (pending): %s", r.Code, r.Stderr)
	}
	// A decided request, which --all lists from its closed partition.
	if r := e.Run(forceArgs("core-api")...); r.Code != 12 {
		t.Fatalf("force under four eyes: exit %d, want 12 (pending): %s", r.Code, r.Stderr)
	}
	r := e.Run("request", "list", "-o", "json")
	var doc struct {
		Requests []struct {
			ID      string `json:"id"`
			Summary string `json:"summary"`
		} `json:"requests"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || r.Code != 0 {
		t.Fatalf("request list: exit %d, %v: %s", r.Code, err, r.Stderr)
	}
	id := ""
	for _, q := range doc.Requests {
		if strings.Contains(q.Summary, "core-api") {
			id = q.ID
		}
	}
	if r := e.Run("request", "cancel", id, "--reason", "bench"); r.Code != 0 {
		t.Fatalf("cancel %s: exit %d: %s", id, r.Code, r.Stderr)
	}
	for _, args := range [][]string{{"request", "list"}, {"request", "list", "--reviews"}, {"request", "list", "-o", "json"},
		{"request", "list", "--all"}, {"request", "list", "--all", "-o", "json"}, {"request", "list", "--all", "--reviews"}} {
		w.reset()
		c.reset()
		r := e.Run(args...)
		if r.Code != 0 || (args[len(args)-1] == "list" && !strings.Contains(r.Stdout, "force open openai")) ||
			(args[len(args)-1] == "--all" && !strings.Contains(r.Stdout, "canceled")) {
			t.Fatalf("%v: exit %d: %s%s", args, r.Code, r.Stdout, r.Stderr)
		}
		requests, rounds := w.counts()
		t.Logf("%v: %d requests in %d round trips, %d scans", args, requests, rounds, c.op("Scan"))
		if scans := c.op("Scan") + c.op("Scan!"); scans != 0 || requests > 3 || rounds > 2 {
			t.Errorf("%v: %d requests in %d round trips, %d scans; want at most 3 in 2, none a scan", args, requests, rounds, scans)
		}
	}
}
