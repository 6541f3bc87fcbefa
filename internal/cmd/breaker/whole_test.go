package breaker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// A force of 80 dependencies does not fit one transaction (50 levers with
// their records). Without --chunked it is refused before anything is
// written, naming the limit and the flag; with --chunked, and one
// dependency forced by someone else while the two transactions are in
// flight, the chunk holding it is refused whole, the other lands, and
// every dependency is reported in -o json and in the table (forced, or not
// forced and why, with its transaction), exiting 15 (a partial write),
// never 4.
func TestForceOfEightyIsRefusedWholeOrChunkedWithEveryDependencyReported(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	other := clitest.New(t, clitest.Parallel())
	other.Setenv("KOSHACTL_ACTOR", "other@test")
	other.UseDynamoDB(p.URL(), "kosha-control")
	deps := func(prefix string) []string {
		out := make([]string, 80)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%02d", prefix, i)
		}
		return out
	}
	force := func(ds []string, flags ...string) []string {
		return append(append([]string{"breaker", "force-open", "--reason", "failover", "--for", "30m", "--allow-unknown"}, flags...), ds...)
	}

	sent := p.Seen(clitest.Transact)
	r := e.Run(force(deps("dep"), "-o", "json")...)
	if r.Code != exitcode.Usage || r.Stdout != "" {
		t.Fatalf("80 dependencies without --chunked: exit %d, want 2 and nothing on stdout\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"80 overrides", "at most 50", "nothing was written", "--chunked"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, r.Stderr)
		}
	}
	if p.Seen(clitest.Transact) != sent {
		t.Fatalf("a refused change sent %d transaction(s)", p.Seen(clitest.Transact)-sent)
	}
	if got := e.MustRun(0, "breaker", "list", "-o", "json").Stdout; strings.Contains(got, "dep-") {
		t.Fatalf("a refused change forced overrides:\n%s", got)
	}

	// run forces ds --chunked with taken forced by the other operator while
	// both transactions are held at the proxy.
	held := 0
	run := func(ds []string, taken string, flags ...string) clitest.Result {
		t.Helper()
		held += 2
		p.LoseNext(clitest.Transact, 1, faultproxy.Hold)
		p.LoseNext(clitest.Transact, 2, faultproxy.Hold)
		done := make(chan clitest.Result, 1)
		go func() { done <- e.Run(force(ds, append([]string{"--chunked"}, flags...)...)...) }()
		p.WaitHeld(t, clitest.Transact, held)
		other.MustRun(0, "breaker", "force-open", taken, "--reason", "theirs", "--for", "1h", "--allow-unknown")
		p.Release()
		return <-done
	}
	ds := deps("dep")
	r = run(ds, "dep-70", "-o", "json")
	if r.Code != exitcode.PartialWrite {
		t.Fatalf("a chunked force with one chunk refused: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.PartialWrite, r.Stdout, r.Stderr)
	}
	doc := clitest.Decode[struct {
		Results []struct {
			Dependency string `json:"dependency"`
			Action     string `json:"action"`
			AuditID    string `json:"audit_id"`
			Chunk      int    `json:"chunk"`
		} `json:"results"`
		NotWritten []struct {
			Target  string `json:"target"`
			Outcome string `json:"outcome"`
			Chunk   int    `json:"chunk"`
			Why     string `json:"why"`
		} `json:"not_written"`
		Chunks struct {
			Transactions         int `json:"transactions"`
			LeversPerTransaction int `json:"levers_per_transaction"`
			Written              int `json:"written"`
			NotWritten           int `json:"not_written"`
		} `json:"chunks"`
	}](t, r.Stdout)
	if len(doc.Results) != 50 || len(doc.NotWritten) != 30 {
		t.Fatalf("-o json lists %d forced and %d not written, want every one of the 80: 50 and 30\n%s", len(doc.Results), len(doc.NotWritten), r.Stdout)
	}
	for i, res := range doc.Results {
		if res.Dependency != ds[i] || res.Action != "forced" || res.AuditID == "" || res.Chunk != 1 {
			t.Errorf("result %d: %+v, want %s forced in transaction 1 with its record", i, res, ds[i])
		}
	}
	for i, nw := range doc.NotWritten {
		if nw.Target != ds[50+i] || nw.Outcome != "not-written" || nw.Chunk != 2 || nw.Why == "" {
			t.Errorf("not written %d: %+v, want %s not written in transaction 2, and why", i, nw, ds[50+i])
		}
	}
	if !strings.Contains(doc.NotWritten[20].Why, "other@test") {
		t.Errorf("dep-70 is not written because someone else forced it, and the output does not say who: %q", doc.NotWritten[20].Why)
	}
	if doc.Chunks.Transactions != 2 || doc.Chunks.LeversPerTransaction != 50 || doc.Chunks.Written != 50 || doc.Chunks.NotWritten != 30 {
		t.Errorf("chunks %+v, want 2 transactions, 50 written, 30 not", doc.Chunks)
	}
	if !strings.Contains(r.Stderr, "partial write") {
		t.Errorf("stderr does not say it was a partial write:\n%s", r.Stderr)
	}
	recs := 0
	for _, rec := range recordsOn(t, e, "breaker#dep-*") {
		if rec.Reason == "failover" {
			recs++
		}
	}
	if recs != 50 {
		t.Errorf("%d records of the force, want the 50 it wrote", recs)
	}

	// The table lists every dependency too.
	ds = deps("tab")
	r = run(ds, "tab-60")
	if r.Code != exitcode.PartialWrite {
		t.Fatalf("table: exit %d, want %d\n%s\n%s", r.Code, exitcode.PartialWrite, r.Stdout, r.Stderr)
	}
	for _, d := range ds[:50] {
		if !strings.Contains(r.Stdout, "Forced open "+d+" ") {
			t.Errorf("the table does not say %s was forced:\n%s", d, r.Stdout)
		}
	}
	for _, d := range ds[50:] {
		if !strings.Contains(r.Stdout, "Not written: "+d+" (transaction 2): ") {
			t.Errorf("the table does not say %s was not written:\n%s", d, r.Stdout)
		}
	}
	if !strings.Contains(r.Stdout, "Written in 2 transactions of at most 50 levers, each whole: 50 written, 30 not written.") {
		t.Errorf("the table does not say how the chunks went:\n%s", r.Stdout)
	}
}
