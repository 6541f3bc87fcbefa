package breaker_test

import (
	"context"
	"fmt"
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

// clear --all of 120 overrides: its scan is the only read of overrides
// (each override is cleared conditional on what the scan found, never
// batch-read again) besides one GetItem of the table's policy,
// the clears go in three transactions of at most 50 with their records,
// and every clear is recorded exactly once. (moto's requests pass one at a
// time: it answers HTTP 500 to concurrent transactions, DynamoDB does not.)
func TestClearAllReadsOnceAndRecordsEveryClear(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	p := faultproxy.Start(t, oneAtATime(t, endpoint))
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(p.URL(), "kosha-control")
	e.MustRun(0, "store", "init")
	deps := make([]string, 120)
	for i := range deps {
		deps[i] = fmt.Sprintf("dep-%03d", i)
	}
	e.MustRun(0, append([]string{"breaker", "force-open", "--reason", "drill", "--for", "30m", "--allow-unknown"}, deps...)...)

	batch, tx, scans, gets := p.Seen("BatchGetItem"), p.Seen(clitest.Transact), p.Seen("Scan"), p.Seen("GetItem")
	r := e.MustRun(0, "breaker", "clear", "--all", "--reason", "drill over")
	if got := strings.Count(r.Stdout, "Cleared override on dep-"); got != len(deps) {
		t.Fatalf("%d Cleared lines, want %d:\n%s", got, len(deps), r.Stdout)
	}
	if n := p.Seen("BatchGetItem") - batch; n != 0 {
		t.Errorf("clear --all batch-read the overrides it had listed: %d BatchGetItem", n)
	}
	if n := p.Seen("GetItem") - gets; n != 1 {
		t.Errorf("clear --all made %d GetItem, want 1 (the table's policy)", n)
	}
	if n := p.Seen("Scan") - scans; n < 1 {
		t.Errorf("clear --all made no scan")
	}
	if n := p.Seen(clitest.Transact) - tx; n != 3 {
		t.Errorf("clear --all of %d overrides made %d transactions, want 3 (50 a transaction)", len(deps), n)
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

// oneAtATime is a proxy to endpoint that passes one request at a time:
// moto 5.2.1 answers HTTP 500 to a TransactWriteItems that runs while
// another does (its rollback copy of the table races the other's writes),
// which the SDK retries, and DynamoDB never does.
func oneAtATime(t *testing.T, endpoint string) string {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var one sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		one.Lock()
		defer one.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
