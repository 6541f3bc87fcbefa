package ratelimit_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// The operator session against a real DynamoDB-API server, including the
// parallel scan of list and a reset racing data-plane takes.
func TestRateLimitOnDynamoDBContext(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")
	r := e.MustRun(exitcode.Unavailable, "ratelimit", "list")
	if !strings.Contains(r.Stderr, "store init") {
		t.Errorf("missing table: %s", r.Stderr)
	}
	e.MustRun(0, "store", "init")

	if b := get(t, e, "alice"); b.Exists || b.Tokens != 20 {
		t.Errorf("missing bucket: %+v", b)
	}
	r = e.MustRun(0, "ratelimit", "drain", "--create", "alice", "--reason", "drill")
	if !strings.Contains(r.Stderr, `context "dev"`) || !strings.Contains(r.Stderr, "kosha-control") {
		t.Errorf("acted-on line: %s", r.Stderr)
	}
	e.MustRun(0, "ratelimit", "set", "--create", "bob", "--tokens", "0.5")
	e.MustRun(0, "ratelimit", "set", "--create", "carol", "--tokens", "15")

	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
	it, err := s.Get(context.Background(), "rl#alice")
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := it.Float("tokens")
	updated, _ := it.Int("updated_at")
	ttl, _ := it.Int("ttl")
	if tokens != 0 || updated != clitest.Epoch.UnixMilli() || ttl != clitest.Epoch.Unix()+3600 || len(it) != 5 || len(it.WriteID()) != 32 {
		t.Errorf("stored item does not follow the contract: %v", it)
	}

	type listOut struct {
		Items []bucket `json:"items"`
	}
	for _, seg := range []string{"0", "1", "3"} {
		l := clitest.Decode[listOut](t, e.MustRun(0, "ratelimit", "list", "--throttled", "--sort", "tokens", "--segments", seg, "-o", "json").Stdout)
		if len(l.Items) != 2 || l.Items[0].Client != "alice" || l.Items[1].Client != "bob" {
			t.Errorf("--segments %s: %+v", seg, l.Items)
		}
	}

	res := clitest.Decode[changeResult](t, e.MustRun(0, "ratelimit", "reset", "--all-throttled", "-o", "json").Stdout)
	if len(res.Results) != 2 || res.Results[0].Client != "alice" || res.Results[1].Client != "bob" {
		t.Errorf("reset --all-throttled: %+v", res)
	}

	// Data-plane takes race the operator's reset of carol: every refused
	// conditional write is re-read and retried, so the reset lands, and takes
	// after it spend from the full bucket.
	l, err := limiter.New(s, limiter.Config{Clock: e.Clock})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				if _, err := l.Take(context.Background(), "carol"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	res = clitest.Decode[changeResult](t, e.MustRun(0, "ratelimit", "reset", "carol", "-o", "json").Stdout)
	wg.Wait()
	if len(res.Results) != 1 || res.Results[0].Action != "reset" {
		t.Errorf("reset under load: %+v", res)
	}
	if b := get(t, e, "carol"); b.Tokens < 8 || b.Tokens > 20 || b.Tokens != float64(int(b.Tokens)) {
		t.Errorf("carol after reset under load: %+v", b)
	}
	if n := len(audits(t, e).Items); n != 6 {
		t.Errorf("%d audit records on DynamoDB, want 6", n)
	}
}
