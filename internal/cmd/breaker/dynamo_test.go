package breaker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// The same operator session as on the local context, against a real
// DynamoDB-API server through a context with an endpoint.
func TestBreakerOnDynamoDBContext(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")

	// Before store init the table is missing: exit 5 and a hint.
	r := e.MustRun(exitcode.Unavailable, "breaker", "list")
	if !strings.Contains(r.Stderr, "store init") {
		t.Errorf("missing-table error should point to store init: %s", r.Stderr)
	}

	r = e.MustRun(0, "store", "init", "--dry-run")
	if !strings.Contains(r.Stdout, "Would create") {
		t.Errorf("dry run: %s", r.Stdout)
	}
	e.MustRun(exitcode.Unavailable, "breaker", "list") // still no table
	r = e.MustRun(0, "store", "init")
	if !strings.Contains(r.Stdout, "created") || !strings.Contains(r.Stdout, "time to live") {
		t.Errorf("store init output:\n%s", r.Stdout)
	}
	if r = e.MustRun(0, "store", "init"); !strings.Contains(r.Stdout, "already exists") {
		t.Errorf("second store init should be a no-op that says so:\n%s", r.Stdout)
	}

	r = e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	if !strings.Contains(r.Stderr, `context "dev"`) || !strings.Contains(r.Stderr, "kosha-control") {
		t.Errorf("acted-on line should name the context and table: %s", r.Stderr)
	}
	e.MustRun(exitcode.Conflict, "breaker", "force-open", "openai", "--reason", "again")

	// The raw item follows docs/contracts/breaker-override.md.
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
	it, err := s.Get(context.Background(), "breaker#openai")
	if err != nil {
		t.Fatal(err)
	}
	created, _ := it.Int("created_at")
	expires, _ := it.Int("expires_at")
	ttl, _ := it.Int("ttl")
	version, _ := it.Int("version")
	if it.Str("state") != "forced_open" || it.Str("reason") != "provider incident" || it.Str("actor") != "tester@test" ||
		created != clitest.Epoch.UnixMilli() || expires != created+30*60*1000 || ttl != expires/1000 || version != 1 {
		t.Errorf("stored item does not follow the contract: %v", it)
	}
	// The contract's 8 attributes plus the additive index keys (overrides,
	// lists) and the write's own token (32 hex digits).
	if len(it) != 12 || it.Str("ix_override") != "breaker" || it.Str("ix_list") != "breaker" || it.Str("ix_list_sort") != "breaker#openai" ||
		len(it.WriteID()) != 32 {
		t.Errorf("stored item has attributes %v, the contract names 8 plus ix_override, ix_list, ix_list_sort and write_id", it.Keys())
	}

	out := clitest.Decode[struct {
		Items []view `json:"items"`
	}](t, e.MustRun(0, "breaker", "list", "-o", "json").Stdout)
	if len(out.Items) != 1 || !out.Items[0].Active {
		t.Errorf("list: %+v", out)
	}
	e.MustRun(0, "breaker", "clear", "openai")
	if _, err := s.Get(context.Background(), "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("clear must delete the item, got %v", err)
	}
	recs := clitest.Decode[struct {
		Items []json.RawMessage `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "-o", "json").Stdout)
	if len(recs.Items) != 2 {
		t.Errorf("audit on DynamoDB has %d records, want 2", len(recs.Items))
	}
}

func TestUnreachableEndpointIsUnavailable(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "config", "set-context", "down", "--table", "t", "--region", "us-east-1",
		"--endpoint-url", "http://127.0.0.1:1", "--static-credentials", "--use")
	r := e.MustRun(exitcode.Unavailable, "breaker", "force-open", "openai", "--reason", "x")
	if !strings.Contains(r.Stderr, "127.0.0.1:1") {
		t.Errorf("error should name the endpoint: %s", r.Stderr)
	}
	// The error is one line (beside the context the change was sent to:
	// with nothing in force, the change is the first request, and no
	// attempt of it connected).
	errs := 0
	for _, l := range strings.Split(strings.TrimSpace(r.Stderr), "\n") {
		if !strings.HasPrefix(l, "acted on context ") {
			errs++
		}
	}
	if errs != 1 || !strings.Contains(r.Stderr, "not sent") {
		t.Errorf("not one line saying nothing was sent: %q", r.Stderr)
	}
}

// --debug against moto: one line per DynamoDB operation with its status
// and request id, on stderr, and never the (dummy) secret key or a signature.
// A force-open with nothing in force is one operation: its transaction.
func TestDebugLogsDynamoDBOperations(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")
	r := e.MustRun(0, "store", "init", "--debug")
	for _, want := range []string{"debug: aws dynamodb DescribeTable: HTTP 400 ResourceNotFoundException", "debug: aws dynamodb CreateTable: HTTP 200"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("store init --debug lacks %q:\n%s", want, r.Stderr)
		}
	}
	r = e.MustRun(0, "--debug", "breaker", "force-open", "openai", "--reason", "debugging", "--for", "5m")
	lines := 0
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(l, "debug: aws dynamodb ") {
			lines++
			if !strings.Contains(l, `request id "`) {
				t.Errorf("no request id in %q", l)
			}
		}
	}
	// Nothing in force: no read, one transaction holding the override, its
	// record and the check that the table has no policy.
	if lines != 1 || !strings.Contains(r.Stderr, "debug: aws dynamodb TransactWriteItems: HTTP 200") {
		t.Errorf("force-open --debug should log its one transaction:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stdout, "debug:") {
		t.Errorf("debug output on stdout:\n%s", r.Stdout)
	}
	for _, secret := range []string{"koshactl-local-secret", "Authorization", "Signature=", "aws4_request"} {
		if strings.Contains(r.Stderr+r.Stdout, secret) {
			t.Errorf("%q appeared in the debug output:\n%s", secret, r.Stderr)
		}
	}
	if r := e.MustRun(0, "breaker", "list"); strings.Contains(r.Stderr, "debug:") {
		t.Errorf("no --debug, no debug lines:\n%s", r.Stderr)
	}
}

// TestForceOpenManyOnDynamoDB: a conflict on one of four dependencies
// writes none; a force of several prints in argument order.
func TestForceOpenManyOnDynamoDB(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")
	e.MustRun(0, "store", "init")
	e.MustRun(0, "breaker", "force-open", "held", "--reason", "theirs", "--allow-unknown")
	r := e.MustRun(exitcode.Conflict, "breaker", "force-open", "d1", "d2", "held", "d4", "--reason", "drill", "--allow-unknown")
	if !strings.Contains(r.Stderr, "held is already forced open") {
		t.Errorf("conflict message: %s", r.Stderr)
	}
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
	for _, d := range []string{"d1", "d2", "d4"} {
		if _, err := s.Get(context.Background(), "breaker#"+d); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s written despite the conflict: %v", d, err)
		}
	}
	r = e.MustRun(0, "breaker", "force-open", "d4", "d1", "d2", "--reason", "drill", "--allow-unknown")
	if i4, i1, i2 := strings.Index(r.Stdout, "d4"), strings.Index(r.Stdout, "d1"), strings.Index(r.Stdout, "d2"); i4 < 0 || i4 > i1 || i1 > i2 {
		t.Errorf("results not in argument order:\n%s", r.Stdout)
	}
	r = e.MustRun(0, "breaker", "clear", "d2", "nothing", "d4", "--reason", "done", "--allow-unknown")
	if i2, in, i4 := strings.Index(r.Stdout, "d2"), strings.Index(r.Stdout, "nothing"), strings.Index(r.Stdout, "d4"); i2 < 0 || i2 > in || in > i4 {
		t.Errorf("clear results not in argument order:\n%s", r.Stdout)
	}
}
