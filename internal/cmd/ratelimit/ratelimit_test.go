package ratelimit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/changeloop"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/list"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/reset"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

type bucket struct {
	Kind              string   `json:"kind"`
	Client            string   `json:"client"`
	Key               string   `json:"key"`
	Exists            bool     `json:"exists"`
	StoredTokens      *float64 `json:"stored_tokens"`
	UpdatedAt         *string  `json:"updated_at"`
	UpdatedAtMs       *int64   `json:"updated_at_ms"`
	Tokens            float64  `json:"tokens"`
	Capacity          float64  `json:"capacity"`
	RefillPerSecond   float64  `json:"refill_per_second"`
	Admit             bool     `json:"admit"`
	RetryAfterSeconds float64  `json:"retry_after_seconds"`
	NextTokenSeconds  float64  `json:"next_token_seconds"`
	FullInSeconds     float64  `json:"full_in_seconds"`
	TTLExpiresAt      *string  `json:"ttl_expires_at"`
	AsOf              string   `json:"as_of"`
}

type changeResult struct {
	Kind    string `json:"kind"`
	Context string `json:"context"`
	DryRun  bool   `json:"dry_run"`
	Results []struct {
		Client  string `json:"client"`
		Action  string `json:"action"`
		Before  bucket `json:"before"`
		After   bucket `json:"after"`
		AuditID string `json:"audit_id"`
	} `json:"results"`
}

type auditList struct {
	Items []struct {
		Actor   string          `json:"actor"`
		Action  string          `json:"action"`
		Subject string          `json:"subject"`
		Reason  string          `json:"reason"`
		Before  json.RawMessage `json:"before"`
		After   json.RawMessage `json:"after"`
	} `json:"items"`
}

func get(t *testing.T, e *clitest.Env, client string) bucket {
	t.Helper()
	return clitest.Decode[bucket](t, e.MustRun(0, "ratelimit", "get", client, "-o", "json").Stdout)
}

// localItems returns every rl# item of the local context's store, read
// directly, as the data plane would see them.
func localItems(t *testing.T, e *clitest.Env) map[string]store.Item {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(e.Dir, "state", "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]store.Item{}
	for it, err := range s.Scan(context.Background(), store.ScanQuery{Prefix: ratelimit.KeyPrefix}) {
		if err != nil {
			t.Fatal(err)
		}
		out[it.PK()] = it
	}
	return out
}

func audits(t *testing.T, e *clitest.Env) auditList {
	t.Helper()
	return clitest.Decode[auditList](t, e.MustRun(0, "audit", "list", "-o", "json").Stdout)
}

func TestGetMissingBucketIsFull(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	b := get(t, e, "tenant-7:alice@example.com")
	if b.Kind != "RateLimitBucket" || b.Exists || b.Tokens != 20 || !b.Admit || b.StoredTokens != nil || b.UpdatedAt != nil ||
		b.Capacity != 20 || b.RefillPerSecond != 1 || b.FullInSeconds != 0 || b.Key != "rl#tenant-7:alice@example.com" {
		t.Errorf("missing bucket = %+v", b)
	}
	out := e.MustRun(0, "ratelimit", "get", "alice").Stdout
	for _, want := range []string{"no item (a missing item is a full bucket)", "Tokens now:    20 of 20", "Next request:  admitted", "capacity 20, 1 token/s (LLD defaults)"} {
		if !strings.Contains(out, want) {
			t.Errorf("get output lacks %q:\n%s", want, out)
		}
	}
}

func TestDrainGetResetCycle(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(0, "ratelimit", "drain", "--create", "alice", "--reason", "429 drill")
	if !strings.Contains(r.Stdout, "Drained alice: 20 → 0 tokens: requests refused for 1s (until 2026-11-29T19:00:01Z)") {
		t.Errorf("drain output:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stderr, `acted on context "local" (sqlite`) {
		t.Errorf("drain must name what it acted on: %s", r.Stderr)
	}

	e.Clock.Advance(250 * time.Millisecond)
	b := get(t, e, "alice")
	if !b.Exists || *b.StoredTokens != 0 || b.Tokens != 0.25 || b.Admit || b.RetryAfterSeconds != 0.75 ||
		b.NextTokenSeconds != 0.75 || b.FullInSeconds != 19.75 || *b.UpdatedAt != "2026-11-29T19:00:00.000Z" ||
		*b.UpdatedAtMs != clitest.Epoch.UnixMilli() || *b.TTLExpiresAt != "2026-11-29T20:00:00.000Z" {
		t.Errorf("get after drain = %+v", b)
	}
	out := e.MustRun(0, "ratelimit", "get", "alice").Stdout
	for _, want := range []string{"Stored:        0 tokens, updated 2026-11-29T19:00:00Z", "Tokens now:    0.25 of 20",
		"Next request:  refused (429), retry after 750ms", "Next token:    in 750ms", "Full:          in 20s", "TTL expiry:    2026-11-29T20:00:00Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("get output lacks %q:\n%s", want, out)
		}
	}

	res := clitest.Decode[changeResult](t, e.MustRun(0, "ratelimit", "reset", "alice", "--reason", "drill over", "-o", "json").Stdout)
	if res.Kind != "RateLimitResetResult" || len(res.Results) != 1 || res.Results[0].Action != "reset" || res.Results[0].AuditID == "" ||
		res.Results[0].Before.Tokens != 0.25 || res.Results[0].After.Tokens != 20 || !res.Results[0].After.Admit {
		t.Errorf("reset = %+v", res)
	}
	if b := get(t, e, "alice"); !b.Exists || b.Tokens != 20 {
		t.Errorf("after reset: %+v", b)
	}
	// Reset is idempotent: a full bucket succeeds, says so, writes nothing.
	r = e.MustRun(0, "ratelimit", "reset", "alice")
	if !strings.Contains(r.Stdout, "alice is already full (20 tokens): nothing to reset") {
		t.Errorf("second reset: %s", r.Stdout)
	}
	recs := audits(t, e)
	if len(recs.Items) != 2 {
		t.Fatalf("audit records: %+v", recs)
	}
	rst, drn := recs.Items[0], recs.Items[1]
	type state struct {
		Exists   bool    `json:"exists"`
		Tokens   float64 `json:"tokens"`
		Refilled float64 `json:"refilled_tokens"`
	}
	drnBefore, drnAfter := clitest.Decode[state](t, string(drn.Before)), clitest.Decode[state](t, string(drn.After))
	if drn.Action != "ratelimit.drain" || drn.Subject != "rl#alice" || drn.Reason != "429 drill" || drn.Actor != "tester@test" ||
		drnBefore.Exists || drnBefore.Refilled != 20 || !drnAfter.Exists || drnAfter.Tokens != 0 {
		t.Errorf("drain record: %+v\nbefore %s\nafter %s", drn, drn.Before, drn.After)
	}
	rstBefore, rstAfter := clitest.Decode[state](t, string(rst.Before)), clitest.Decode[state](t, string(rst.After))
	if rst.Action != "ratelimit.reset" || rst.Reason != "drill over" || rstBefore.Refilled != 0.25 || rstAfter.Tokens != 20 {
		t.Errorf("reset record: %+v\nbefore %s\nafter %s", rst, rst.Before, rst.After)
	}
}

// The item the commands write follows docs/contracts/rate-limit-bucket.md,
// so the data plane reads it.
func TestWrittenItemFollowsContract(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "ratelimit", "drain", "--create", "drill", "--for", "30s")
	it := localItems(t, e)["rl#drill"]
	tokens, _ := it.Float("tokens")
	updated, _ := it.Int("updated_at")
	ttl, _ := it.Int("ttl")
	if tokens != -30 || updated != clitest.Epoch.UnixMilli() || ttl != clitest.Epoch.Unix()+3600 || len(it) != 5 || len(it.WriteID()) != 32 {
		t.Fatalf("item = %v", it)
	}
	// The reference take refuses for 31 s, then admits.
	s, err := sqlite.Open(context.Background(), filepath.Join(e.Dir, "state", "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clk := clocktest.NewFake(clitest.Epoch.Add(30 * time.Second))
	l, err := limiter.New(s, limiter.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Take(context.Background(), "drill"); d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("30 s into a 30 s drain: %+v", d)
	}
	clk.Advance(time.Second)
	if d, _ := l.Take(context.Background(), "drill"); !d.Allowed {
		t.Errorf("31 s after: %+v", d)
	}
	r := e.MustRun(0, "ratelimit", "drain", "--create", "other", "--for", "30s")
	if !strings.Contains(r.Stdout, "requests refused for 31s") {
		t.Errorf("timed drain output: %s", r.Stdout)
	}
	e.MustRun(exitcode.Usage, "ratelimit", "drain", "--create", "other", "--for", "2h")
}

func TestSet(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(0, "ratelimit", "set", "--create", "alice", "--tokens", "7.5")
	if !strings.Contains(r.Stdout, "Set alice: 20 → 7.5 tokens (next request admitted)") {
		t.Errorf("set output: %s", r.Stdout)
	}
	if b := get(t, e, "alice"); *b.StoredTokens != 7.5 {
		t.Errorf("after set: %+v", b)
	}
	r = e.MustRun(0, "ratelimit", "set", "--create", "alice", "--tokens", "7.5")
	if !strings.Contains(r.Stdout, "alice already holds 7.5 tokens: nothing to change") {
		t.Errorf("same set: %s", r.Stdout)
	}
	for _, args := range [][]string{
		{"set", "alice"},
		{"set", "alice", "--tokens", "21"},
		{"set", "alice", "--tokens", "-1"},
		{"set", "alice", "--tokens", "many"},
		{"set", "alice", "bob", "--tokens", "1"},
	} {
		r := e.MustRun(exitcode.Usage, append([]string{"ratelimit"}, args...)...)
		if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.HasPrefix(r.Stderr, "error: ") {
			t.Errorf("%v: want one error line, got %q", args, r.Stderr)
		}
	}
	if b := get(t, e, "alice"); *b.StoredTokens != 7.5 {
		t.Errorf("a refused set changed the bucket: %+v", b)
	}
	if n := len(audits(t, e).Items); n != 1 {
		t.Errorf("%d audit records, want 1", n)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "ratelimit", "set", "--create", "alice", "--tokens", "3")
	before := localItems(t, e)
	for _, args := range [][]string{
		{"reset", "alice"}, {"drain", "alice"}, {"drain", "bob", "--for", "1m", "--create"}, {"set", "alice", "--tokens", "9"}, {"reset", "--all-throttled"},
	} {
		r := e.MustRun(0, append(append([]string{"ratelimit"}, args...), "--dry-run")...)
		if !strings.Contains(r.Stderr, "dry run, nothing written") {
			t.Errorf("%v: stderr %q", args, r.Stderr)
		}
		allThrottled := args[0] == "reset" && args[1] == "--all-throttled" // nobody is throttled: nothing to plan
		if !allThrottled && !strings.Contains(r.Stdout, "Would") || allThrottled && !strings.Contains(r.Stdout, "No client is being limited") {
			t.Errorf("%v: stdout %q", args, r.Stdout)
		}
	}
	res := clitest.Decode[changeResult](t, e.MustRun(0, "ratelimit", "drain", "--create", "alice", "--dry-run", "-o", "json").Stdout)
	if !res.DryRun || res.Results[0].Action != "would-drain" || res.Results[0].AuditID != "" || res.Results[0].After.Tokens != 0 {
		t.Errorf("dry-run JSON: %+v", res)
	}
	if after := localItems(t, e); !reflect.DeepEqual(before, after) {
		t.Errorf("dry runs changed the store:\nbefore %v\nafter  %v", before, after)
	}
	if n := len(audits(t, e).Items); n != 1 {
		t.Errorf("dry runs were audited: %d records", n)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "ratelimit", "list")
	e.MustRun(0, "ratelimit", "drain", "--create", "alice")
	e.Clock.Advance(100 * time.Millisecond)
	e.MustRun(0, "ratelimit", "set", "--create", "bob", "--tokens", "12")
	e.Clock.Advance(100 * time.Millisecond)
	e.MustRun(0, "ratelimit", "drain", "--create", "carol", "--for", "1m")
	e.Clock.Advance(100 * time.Millisecond)

	out := e.MustRun(0, "ratelimit", "list").Stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "CLIENT") || !strings.HasPrefix(lines[1], "alice") ||
		!strings.Contains(lines[1], "0.3/20") || !strings.Contains(lines[1], "refused, retry in 700ms") ||
		!strings.Contains(lines[2], "12.2/20") || !strings.Contains(lines[2], "admitted") ||
		!strings.Contains(lines[3], "-59.9/20") || !strings.Contains(lines[3], "2026-11-29T19:00:00Z") {
		t.Errorf("list table:\n%s", out)
	}

	type listOut struct {
		Kind       string          `json:"kind"`
		Items      []bucket        `json:"items"`
		Matched    int             `json:"matched"`
		Malformed  []string        `json:"malformed"`
		Unreadable []store.Problem `json:"unreadable"`
	}
	clients := func(l listOut) string {
		var c []string
		for _, b := range l.Items {
			c = append(c, b.Client)
		}
		return strings.Join(c, ",")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "alice,bob,carol"},
		{[]string{"--throttled"}, "alice,carol"},
		{[]string{"--sort", "tokens"}, "carol,alice,bob"},
		{[]string{"--sort", "updated"}, "carol,bob,alice"},
		{[]string{"--sort", "tokens", "--limit", "1"}, "carol"},
	} {
		l := clitest.Decode[listOut](t, e.MustRun(0, append([]string{"ratelimit", "list", "-o", "json"}, tc.args...)...).Stdout)
		if got := clients(l); got != tc.want || l.Kind != "RateLimitBucketList" {
			t.Errorf("list %v = %s, want %s", tc.args, got, tc.want)
		}
	}
	r := e.MustRun(0, "ratelimit", "list", "--limit", "2")
	if !strings.Contains(r.Stderr, "showing 2 of 3 buckets") {
		t.Errorf("a cut list should say so on stderr: %q", r.Stderr)
	}
	for _, bad := range [][]string{{"--sort", "size"}, {"--limit", "-1"}, {"--segments", "1000"}, {"extra"}} {
		e.MustRun(exitcode.Usage, append([]string{"ratelimit", "list"}, bad...)...)
	}

	// A malformed item is reported, not fatal.
	s, err := sqlite.Open(context.Background(), filepath.Join(e.Dir, "state", "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), store.Item{"pk": "rl#broken", "tokens": "many"}, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Like every list (breaker list, audit list): the rest is listed, the
	// item named (pk, attribute, problem), exit 10.
	r = e.MustRun(exitcode.Partial, "ratelimit", "list", "-o", "json")
	want := []store.Problem{{PK: "rl#broken", Attribute: "tokens", Problem: `found S "many", want N`}}
	if l := clitest.Decode[listOut](t, r.Stdout); len(l.Items) != 3 || len(l.Malformed) != 1 || !reflect.DeepEqual(l.Unreadable, want) ||
		!strings.Contains(r.Stderr, `partial listing: 1 bucket item does not follow the contract (listed under "unreadable")`) {
		t.Errorf("malformed item: %+v, stderr %q", l, r.Stderr)
	}
	r = e.MustRun(exitcode.Partial, "ratelimit", "list")
	if !strings.Contains(r.Stderr, `warning: rl#broken: tokens: found S "many", want N`+"\n") || !strings.Contains(r.Stderr, "ratelimit reset") ||
		strings.Count(r.Stdout, "\n") != 4 {
		t.Errorf("table: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	r = e.MustRun(exitcode.Error, "ratelimit", "get", "broken")
	if !strings.Contains(r.Stderr, "malformed") || !strings.Contains(r.Stderr, "koshactl ratelimit reset broken") {
		t.Errorf("get of a malformed item should say how to repair it: %q", r.Stderr)
	}
	r = e.MustRun(0, "ratelimit", "reset", "broken")
	if !strings.Contains(r.Stdout, "Reset broken: malformed item → 20 tokens") {
		t.Errorf("repair: %q", r.Stdout)
	}
	if b := get(t, e, "broken"); !b.Exists || b.Tokens != 20 {
		t.Errorf("after repair: %+v", b)
	}
}

func TestResetAllThrottled(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "ratelimit", "drain", "--create", "a")
	e.MustRun(0, "ratelimit", "drain", "--create", "b", "--for", "10m")
	e.MustRun(0, "ratelimit", "set", "--create", "c", "--tokens", "5")
	res := clitest.Decode[changeResult](t, e.MustRun(0, "ratelimit", "reset", "--all-throttled", "-o", "json").Stdout)
	if len(res.Results) != 2 || res.Results[0].Client != "a" || res.Results[1].Client != "b" || res.Results[1].Action != "reset" {
		t.Errorf("reset --all-throttled = %+v", res)
	}
	if b := get(t, e, "c"); b.Tokens != 5 {
		t.Errorf("a client that was not throttled was reset: %+v", b)
	}
	r := e.MustRun(0, "ratelimit", "reset", "--all-throttled")
	if !strings.Contains(r.Stdout, "No client is being limited") {
		t.Errorf("second run: %q", r.Stdout)
	}
	e.MustRun(exitcode.Usage, "ratelimit", "reset")
	e.MustRun(exitcode.Usage, "ratelimit", "reset", "a", "--all-throttled")
}

// Bad client ids exit 2 with an error naming the problem and the fix, and
// nothing is read or written.
func TestBadClientIDs(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	cases := []struct {
		id, mention string
	}{
		{"bad id", "a space at position 4"},
		{"rl#alice", `without the "rl#" key prefix`},
		{strings.Repeat("x", 129), "129 characters long"},
		{"a/b", "'/' at position 2"},
		{"", "empty"},
	}
	for _, tc := range cases {
		for _, args := range [][]string{
			{"get", tc.id}, {"reset", tc.id}, {"reset", "ok", tc.id}, {"drain", tc.id}, {"set", tc.id, "--tokens", "1"},
		} {
			r := e.MustRun(exitcode.Usage, append([]string{"ratelimit"}, args...)...)
			saysCharset := strings.Contains(r.Stderr, "letters, digits and . _ : @ -") || strings.HasPrefix(tc.id, "rl#")
			if !strings.Contains(r.Stderr, tc.mention) || !saysCharset {
				t.Errorf("%v: stderr %q should mention %q and the allowed characters", args, r.Stderr, tc.mention)
			}
		}
	}
	e.MustRun(exitcode.Usage, "ratelimit", "reset", "alice", "alice")
	if items := localItems(t, e); len(items) != 0 {
		t.Errorf("bad ids wrote items: %v", items)
	}
	if n := len(audits(t, e).Items); n != 0 {
		t.Errorf("bad ids were audited: %d", n)
	}
}

func TestProtectedContextNeedsConfirmation(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "config", "set-context", "prod", "--local", e.Dir+"/prod.db", "--protected", "--use")
	for _, args := range [][]string{{"drain", "alice", "--create"}, {"set", "alice", "--tokens", "1", "--create"}} {
		r := e.MustRun(exitcode.Refused, append([]string{"ratelimit"}, args...)...)
		if !strings.Contains(r.Stderr, "protected") || !strings.Contains(r.Stderr, "--yes") {
			t.Errorf("%v: refusal should name --yes: %s", args, r.Stderr)
		}
	}
	if b := get(t, e, "alice"); b.Exists {
		t.Fatalf("a refused drain wrote: %+v", b)
	}
	// Dry runs, reads and no-op resets need no confirmation.
	e.MustRun(0, "ratelimit", "drain", "--create", "alice", "--dry-run")
	e.MustRun(0, "ratelimit", "reset", "alice")
	e.MustRun(0, "ratelimit", "list")

	e.TTY, e.Stdin = true, "staging\n"
	e.MustRun(exitcode.Refused, "ratelimit", "drain", "--create", "alice")
	e.Stdin = "prod\n"
	r := e.MustRun(0, "ratelimit", "drain", "--create", "alice")
	if !strings.Contains(r.Stderr, "PROTECTED") || !strings.Contains(r.Stderr, "drain 1 rate-limit bucket,") {
		t.Errorf("prompt: %s", r.Stderr)
	}
	e.TTY, e.Stdin = false, ""
	e.MustRun(exitcode.Refused, "ratelimit", "reset", "alice")
	e.MustRun(0, "ratelimit", "reset", "alice", "--yes")
	if b := get(t, e, "alice"); b.Tokens != 20 {
		t.Errorf("after confirmed reset: %+v", b)
	}
}

func TestContextLimits(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "config", "set-context", "small", "--local", e.Dir+"/small.db", "--ratelimit-capacity", "5", "--ratelimit-refill", "0.5", "--use")
	b := get(t, e, "alice")
	if b.Capacity != 5 || b.RefillPerSecond != 0.5 || b.Tokens != 5 {
		t.Errorf("context limits not used: %+v", b)
	}
	if out := e.MustRun(0, "ratelimit", "get", "alice").Stdout; !strings.Contains(out, `capacity 5, 0.5 token/s (context "small")`) {
		t.Errorf("get should say where the limits come from:\n%s", out)
	}
	e.MustRun(0, "ratelimit", "drain", "--create", "alice")
	if b := get(t, e, "alice"); b.RetryAfterSeconds != 2 || b.FullInSeconds != 10 {
		t.Errorf("at 0.5/s: %+v", b)
	}
	e.MustRun(exitcode.Usage, "ratelimit", "set", "--create", "alice", "--tokens", "6")
	e.MustRun(0, "ratelimit", "reset", "alice")
	if b := get(t, e, "alice"); *b.StoredTokens != 5 {
		t.Errorf("reset must fill to the context's capacity: %+v", b)
	}
}

func TestFlagsParseIntoOptions(t *testing.T) {
	t.Parallel()
	f := &cmdenv.Factory{}
	var got *reset.Options
	cmd := reset.NewCmd(f, func(_ context.Context, o *reset.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"a", "b", "--reason", "why", "--dry-run", "-y", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := reset.Options{Clients: []string{"a", "b"}, ChangeOptions: changeloop.ChangeOptions{Reason: "why",
		Flags: levercmd.Flags{DryRun: true, Yes: true, Output: "json", RequestTTL: approval.DefaultTTL}}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("options = %+v, want %+v", *got, want)
	}
}

// A long scan whose buckets print after it (sorted by tokens) shows
// progress on stderr when it is a terminal, and clears it before the table;
// off a terminal it prints only the scan's summary. A listing in client
// order on the local store prints each bucket as it is read: the rows are
// its progress, and no progress line is drawn over them.
func TestListProgressOnlyOnTerminal(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, c := range []string{"a", "b", "c"} {
		e.MustRun(0, "ratelimit", "drain", "--create", c)
	}
	for _, sort := range []string{"tokens", "client"} {
		for _, tty := range []bool{true, false} {
			ios, _, out, errOut := iostreams.Test()
			ios.SetStderrTTY(tty)
			f := e.Factory(ios)
			err := list.Run(context.Background(), f, &list.Options{Sort: sort, Output: cmdutil.FormatTable, ProgressAfterItems: 1,
				MaxReadUnits: list.DefaultMaxReadUnits})
			if err != nil {
				t.Fatal(err)
			}
			summary := "scan: 3 items examined in 1 request, no read capacity metered (embedded store)\n"
			progress := tty && sort == "tokens"
			shown := strings.Contains(errOut.String(), "\rscanning: ")
			if shown != progress || progress && !strings.HasSuffix(errOut.String(), "\r\033[K"+summary) ||
				!progress && errOut.String() != summary {
				t.Errorf("sort %s, tty=%v: stderr %q", sort, tty, errOut.String())
			}
			if !strings.Contains(out.String(), "CLIENT") || strings.Contains(out.String(), "scanning") {
				t.Errorf("sort %s, tty=%v: stdout %q", sort, tty, out.String())
			}
		}
	}
}
