package pyinterop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// python is Debian's interpreter, which sees Debian's python3-boto3 (make
// test-deps installs it); a python3 earlier on PATH may not.
const python = "/usr/bin/python3"

const (
	table    = "kosha-control"
	secretID = "kosha/chaos/dev" //nolint:gosec // G101: a secret's name, not its value
)

// session is one koshactl installation and one Python peer sharing a
// moto table and a Secrets Manager fake.
type session struct {
	t    *testing.T
	e    *clitest.Env
	peer string
	env  []string
}

func newSession(t *testing.T) *session {
	t.Helper()
	if out, err := exec.CommandContext(context.Background(), python, "-c", "import boto3").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import boto3 (%v: %s): run make test-deps, which installs Debian's python3-boto3", python, err, bytes.TrimSpace(out))
	}
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	sm := smfake.New(t, e.Clock)
	sm.Create(secretID)
	e.MustRun(0, "config", "set-context", "dev", "--table", table, "--region", moto.Region,
		"--service-endpoint", "dynamodb="+endpoint, "--service-endpoint", "secretsmanager="+sm.URL,
		"--static-credentials", "--chaos-secret-id", secretID, "--use")
	e.MustRun(0, "store", "init")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, e: e, peer: filepath.Join(root, "sdk", "python", "tests", "interop", "peer.py"),
		env: append(os.Environ(), "KOSHA_DYNAMODB_ENDPOINT="+endpoint, "KOSHA_SECRETSMANAGER_ENDPOINT="+sm.URL, "KOSHA_TABLE="+table,
			"AWS_DEFAULT_REGION="+moto.Region, "AWS_ACCESS_KEY_ID=AKIDPYINTEROP", "AWS_SECRET_ACCESS_KEY=not-a-real-secret-key",
			"AWS_CONFIG_FILE="+os.DevNull, "PYTHONDONTWRITEBYTECODE=1", "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_EC2_METADATA_DISABLED=true")}
}

// py runs the peer with args and decodes its JSON answer.
func (s *session) py(args ...string) map[string]any {
	s.t.Helper()
	cmd := exec.CommandContext(context.Background(), python, append([]string{s.peer}, args...)...) //nolint:gosec // G204: the test's own script
	cmd.Env = s.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("peer.py %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		s.t.Fatalf("peer.py %s: %v: %s", strings.Join(args, " "), err, out.String())
	}
	return m
}

func (s *session) nowMs() string { return strconv.FormatInt(s.e.Clock.Now().UnixMilli(), 10) }
func (s *session) nowS() string  { return strconv.FormatInt(s.e.Clock.Now().Unix(), 10) }

func decode(t *testing.T, r clitest.Result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	return m
}

// koshactl breaker force-open → the Python reader sees it active until it
// expires; a hand-written malformed item is read as the contract says, by
// both.
func TestOverridesFromKoshactlToPython(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	e := s.e
	if got := s.py("override", "--dependency", "openai", "--now-ms", s.nowMs()); got["active"] != false || got["treatment"] != "inactive" {
		t.Errorf("no item: %v", got)
	}
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	got := s.py("override", "--dependency", "openai", "--now-ms", s.nowMs())
	if got["active"] != true || got["treatment"] != "active" || got["reason"] != "provider incident" ||
		got["expires_at_ms"] != float64(clitest.Epoch.Add(30*time.Minute).UnixMilli()) {
		t.Errorf("after force-open: %v", got)
	}
	e.Clock.Advance(30*time.Minute - time.Millisecond)
	if got := s.py("override", "--dependency", "openai", "--now-ms", s.nowMs()); got["active"] != true {
		t.Errorf("1 ms before expiry: %v", got)
	}
	e.Clock.Advance(time.Millisecond)
	if got := s.py("override", "--dependency", "openai", "--now-ms", s.nowMs()); got["active"] != false {
		t.Errorf("at expiry: %v", got)
	}
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "again", "--for", "5m")
	e.MustRun(0, "breaker", "clear", "openai", "--reason", "over")
	if got := s.py("override", "--dependency", "openai", "--now-ms", s.nowMs()); got["active"] != false {
		t.Errorf("after clear: %v", got)
	}

	// An item written by hand during an incident, expiry unreadable: held.
	s.py("put-item", "--item", `{"pk":{"S":"breaker#postgres"},"state":{"S":"forced_open"},"reason":{"S":"by hand"},`+
		`"actor":{"S":"bob@ops"},"created_at":{"N":"`+s.nowMs()+`"},"expires_at":{"S":"tomorrow"},"version":{"N":"1"}}`)
	got = s.py("override", "--dependency", "postgres", "--now-ms", s.nowMs())
	if got["active"] != true || got["treatment"] != "active_malformed" || got["expires_at_ms"] != nil {
		t.Errorf("malformed expires_at, Python: %v", got)
	}
	e.Clock.Advance(365 * 24 * time.Hour)
	if got := s.py("override", "--dependency", "postgres", "--now-ms", s.nowMs()); got["active"] != true {
		t.Errorf("malformed expires_at a year later, Python: %v", got)
	}
	k := decode(t, e.MustRun(0, "breaker", "get", "postgres", "-o", "json"))
	bad, _ := k["malformed"].([]any)
	if k["active"] != true || len(bad) != 1 || bad[0].(map[string]any)["attribute"] != "expires_at" {
		t.Errorf("koshactl on the same item: %v", k)
	}
	e.MustRun(0, "breaker", "clear", "postgres", "--reason", "repaired")
	if got := s.py("override", "--dependency", "postgres", "--now-ms", s.nowMs()); got["active"] != false {
		t.Errorf("after koshactl cleared the malformed item: %v", got)
	}
	// A state that is not forced_open forces nothing, whatever else.
	s.py("put-item", "--item", `{"pk":{"S":"breaker#core-api"},"state":{"S":"open"},"version":{"N":"1"}}`)
	if got := s.py("override", "--dependency", "core-api", "--now-ms", s.nowMs()); got["active"] != false || got["treatment"] != "inactive_malformed" {
		t.Errorf("state open: %v", got)
	}
}

// Python takers and koshactl ratelimit get/drain/reset agree on one bucket.
func TestBucketSharedByPythonAndKoshactl(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	e := s.e
	for i := range 5 {
		got := s.py("take", "--client", "alice", "--now-ms", s.nowMs())
		if got["outcome"] != "admitted" || got["remaining"] != float64(19-i) {
			t.Fatalf("take %d: %v", i+1, got)
		}
	}
	e.Clock.Advance(1500 * time.Millisecond)
	k := decode(t, e.MustRun(0, "ratelimit", "get", "alice", "-o", "json"))
	p := s.py("status", "--client", "alice", "--now-ms", s.nowMs())
	if k["tokens"] != p["tokens"] || k["admit"] != true || p["admit"] != true {
		t.Errorf("after 5 Python takes: koshactl %v tokens, Python %v", k["tokens"], p["tokens"])
	}
	// Same-millisecond takes stamped updated_at 0..4 ms ahead; 1.5 s later
	// the bucket holds 15 + 1.496 tokens.
	if tok, _ := k["tokens"].(float64); math.Abs(tok-16.496) > 1e-9 {
		t.Errorf("tokens %v, want 16.496", k["tokens"])
	}

	e.MustRun(0, "ratelimit", "drain", "--create", "alice", "--reason", "interop")
	got := s.py("take", "--client", "alice", "--now-ms", s.nowMs())
	k = decode(t, e.MustRun(0, "ratelimit", "get", "alice", "-o", "json"))
	if got["outcome"] != "denied" || got["allowed"] != false || k["admit"] != false {
		t.Errorf("after drain: Python %v, koshactl %v", got, k)
	}
	if ra, _ := k["retry_after_seconds"].(float64); got["retry_after_ms"] != ra*1000 {
		t.Errorf("retry-after: Python %v ms, koshactl %v s", got["retry_after_ms"], k["retry_after_seconds"])
	}
	e.Clock.Advance(time.Second)
	if got := s.py("take", "--client", "alice", "--now-ms", s.nowMs()); got["outcome"] != "admitted" || got["remaining"] != float64(0) {
		t.Errorf("a second after drain: %v", got)
	}

	e.MustRun(0, "ratelimit", "reset", "alice", "--reason", "interop")
	writeID := func() any {
		it, _ := s.py("get", "--pk", "rl#alice")["item"].(map[string]any)
		return it["write_id"]
	}
	token := writeID()
	if got := s.py("take", "--client", "alice", "--now-ms", s.nowMs()); got["outcome"] != "admitted" || got["remaining"] != float64(19) {
		t.Errorf("after reset: %v", got)
	}
	// The Python take carries the reset's write token forward, as the Go take does.
	if after := writeID(); token == nil || after == nil || after.(map[string]any)["S"] != token.(map[string]any)["S"] {
		t.Errorf("write_id after reset %v, after a Python take %v", token, after)
	}
	k = decode(t, e.MustRun(0, "ratelimit", "get", "alice", "-o", "json"))
	if k["tokens"] != float64(19) {
		t.Errorf("koshactl after reset and a Python take: %v", k)
	}
}

// koshactl chaos sign → the Python verifier, reading AWSCURRENT and
// AWSPREVIOUS, accepts it; after chaos key rotate koshactl keeps signing
// with the previous key for the propagation delay, old headers stay valid
// until they expire, and a key rotated out twice is rejected (kid).
func TestChaosHeadersFromKoshactlToPython(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	e := s.e
	verify := func(value string) map[string]any {
		return s.py("verify", "--secret-id", secretID, "--now", s.nowS(), "--value", value)
	}
	sign := func() (value, kid string) {
		m := decode(t, e.MustRun(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "json"))
		f, _ := m["fields"].(map[string]any)
		return m["value"].(string), f["kid"].(string)
	}
	e.MustRun(0, "chaos", "key", "rotate")
	h1, kid1 := sign()
	if got := verify(h1); got["ok"] != true || got["target"] != "openai" {
		t.Fatalf("fresh header: %v", got)
	}

	e.Clock.Advance(time.Minute)
	rot := decode(t, e.MustRun(0, "chaos", "key", "rotate", "--force", "-o", "json"))
	signsFrom, err := time.Parse(time.RFC3339, rot["signs_from"].(string))
	if err != nil || !signsFrom.Equal(e.Clock.Now().Add(5*time.Minute)) {
		t.Fatalf("signs_from %v (%v), want the 5 min propagation delay", rot["signs_from"], err)
	}
	if got := verify(h1); got["ok"] != true {
		t.Errorf("header of the previous key after one rotation: %v", got)
	}
	e.Clock.Advance(time.Minute)
	h2, kid2 := sign()
	if kid2 != kid1 {
		t.Errorf("inside the propagation delay koshactl signed with %s, want the previous key %s", kid2, kid1)
	}
	if got := verify(h2); got["ok"] != true {
		t.Errorf("header signed inside the propagation delay: %v", got)
	}

	e.Clock.Set(signsFrom)
	h3, kid3 := sign()
	if kid3 == kid1 {
		t.Errorf("after the propagation delay koshactl still signs with %s", kid1)
	}
	if got := verify(h3); got["ok"] != true {
		t.Errorf("header of the new key: %v", got)
	}
	if got := verify(h1); got["ok"] != false || got["check"] != "expiry" {
		t.Errorf("the first header past its exp: %v", got)
	}
	if got := verify(h2); got["ok"] != true {
		t.Errorf("header of the previous key before its exp: %v", got)
	}

	e.MustRun(0, "chaos", "key", "rotate", "--force")
	if got := verify(h2); got["ok"] != false || got["check"] != "kid" {
		t.Errorf("header of a key rotated out twice: %v", got)
	}
	if got := verify(h3); got["ok"] != true {
		t.Errorf("header of the now previous key: %v", got)
	}
	tampered := strings.Replace(h3, "fault=error", "fault=reset", 1)
	if got := verify(tampered); got["ok"] != false || got["check"] != "signature" {
		t.Errorf("tampered header: %v", got)
	}
}
