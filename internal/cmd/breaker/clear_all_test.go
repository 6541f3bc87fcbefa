package breaker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// clear --all of 60 overrides: its scan is the only read of overrides
// (each override is cleared conditional on what the scan found, never
// batch-read again) besides one GetItem of the table's policy,
// the clears go in two transactions of at most 50 with their records
// (two change tokens, whatever the SDK retries), and every clear is
// recorded exactly once. (60, not more: moto copies the whole table for
// each action of a transaction, and a loaded CI machine running 100-action
// transactions on a bigger table timed them out.)
func TestClearAllReadsOnceAndRecordsEveryClear(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	front, changes := recordTokens(t, endpoint)
	p := faultproxy.Start(t, front)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(p.URL(), "kosha-control")
	e.MustRun(0, "store", "init")
	deps := make([]string, 60)
	for i := range deps {
		deps[i] = fmt.Sprintf("dep-%03d", i)
	}
	// The transactions of 50 actions are moto's slowest answers (it copies
	// the table per action): on a loaded machine they, and the read that
	// settles one, outlast the default 10 s a request. This test counts
	// reads and changes, not time: a minute a request.
	slow := []string{"--request-timeout", "1m"}
	e.MustRun(0, append(append([]string{"breaker", "force-open", "--reason", "drill", "--for", "30m", "--allow-unknown", "--chunked"}, slow...), deps...)...)

	batch, scans := p.Seen("BatchGetItem"), p.Seen("Scan")
	changes.forgetReads()
	changesBefore, sendsBefore := changes.distinct(), changes.sends()
	r := e.MustRun(0, append([]string{"breaker", "clear", "--all", "--reason", "drill over"}, slow...)...)
	if got := strings.Count(r.Stdout, "Cleared override on dep-"); got != len(deps) {
		t.Fatalf("%d Cleared lines, want %d:\n%s", got, len(deps), r.Stdout)
	}
	// --all chunks by default, and says so.
	if !strings.Contains(r.Stdout, "Written in 2 transactions of at most 50 levers, each whole: 60 written, 0 not written.") {
		t.Errorf("clear --all does not say it was written in chunks:\n%s", r.Stdout)
	}
	if n := p.Seen("BatchGetItem") - batch; n != 0 {
		t.Errorf("clear --all batch-read the overrides it had listed: %d BatchGetItem", n)
	}
	// A retried change (an answer lost on a loaded machine) may be
	// settled by one read of its proof; nothing else reads. Counted by
	// key: the SDK retrying a slow read is not another read.
	retries := (changes.sends() - sendsBefore) - (changes.distinct() - changesBefore)
	if n := changes.keysRead(); n < 1 || n > 1+retries {
		t.Errorf("clear --all read %d keys with GetItem, want 1 (the table's policy), plus at most one per retried change (%d)", n, retries)
	}
	if n := p.Seen("Scan") - scans; n < 1 {
		t.Errorf("clear --all made no scan")
	}
	if n := changes.distinct() - changesBefore; n != 2 {
		t.Errorf("clear --all of %d overrides made %d changes, want 2 (50 a transaction)", len(deps), n)
	}
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
	clears := map[string]int{}
	for it, err := range s.Scan(context.Background(), store.ScanQuery{Prefix: audit.Prefix}) {
		if err != nil {
			t.Fatal(err)
		}
		if it.Str("action") == "breaker.clear" {
			clears[it.Str("subject")]++
		}
	}
	for _, d := range deps {
		if clears["breaker#"+d] != 1 {
			t.Errorf("%s has %d clear records, want 1", d, clears["breaker#"+d])
		}
	}
	if len(clears) != len(deps) {
		t.Errorf("clear records on %d subjects, want %d", len(clears), len(deps))
	}
	if out := e.MustRun(0, "breaker", "list", "--scan").Stdout; strings.Contains(out, "dep-") {
		t.Errorf("overrides left after clear --all:\n%s", out)
	}
}

// tokenLog is a proxy to endpoint that records the ClientRequestToken of
// every TransactWriteItems it passes: a retry of a change (the SDK's, after
// an answer lost on a loaded machine) carries the same token, another
// change a new one.
type tokenLog struct {
	mu     sync.Mutex
	tokens map[string]int
	// reads counts the GetItem requests of each key: a read the SDK
	// retries (a slow answer on a loaded machine) is still one read.
	reads map[string]int
}

// keysRead is how many distinct keys were read with GetItem since the
// last forgetReads.
func (l *tokenLog) keysRead() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reads)
}

func (l *tokenLog) forgetReads() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.reads)
}

func (l *tokenLog) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tokens)
}

func (l *tokenLog) sends() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.tokens {
		n += c
	}
	return n
}

func recordTokens(t *testing.T, endpoint string) (string, *tokenLog) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	l := &tokenLog{tokens: map[string]int{}, reads: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch target := r.Header.Get("X-Amz-Target"); {
		case strings.HasSuffix(target, "."+clitest.Transact):
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var in struct{ ClientRequestToken string }
			_ = json.Unmarshal(body, &in)
			l.mu.Lock()
			l.tokens[in.ClientRequestToken]++
			l.mu.Unlock()
		case strings.HasSuffix(target, ".GetItem"):
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var in struct {
				Key map[string]struct{ S string }
			}
			_ = json.Unmarshal(body, &in)
			l.mu.Lock()
			l.reads[in.Key["pk"].S]++
			l.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, l
}
