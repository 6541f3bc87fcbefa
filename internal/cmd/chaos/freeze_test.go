package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// withLocalStore runs write on the local context's store, with an audit
// log on it, as the freeze lever will write there.
func withLocalStore(t *testing.T, c *cli, write func(*sqlite.Store, *audit.Log)) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(c.StateDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	write(st, audit.NewLog(st, c.Clock, "local"))
}

// chaos sign while the fleet is frozen: refused (exit 7) naming the freeze,
// nothing minted or recorded; chaos verify explains the freeze check. After
// the lift a header minted before the freeze stays void, and sign, in the
// second of the lift, waits for the next one so its header is honoured.
func TestSignRefusedWhileFrozen(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	old := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	c.Clock.Advance(time.Minute)
	withLocalStore(t, c, func(st *sqlite.Store, log *audit.Log) {
		freezetest.Set(t, st, log, "alice@laptop", "payments failing", "INC-42", c.Clock.Now(), 30*time.Minute)
	})

	r := c.must(exitcode.Refused, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value")
	oneErrorLine(t, r, "frozen by alice@laptop (INC-42)", `"payments failing"`, "until 2026-11-29T19:31:00Z", "koshactl freeze lift")
	if r.Stdout != "" || len(auditRecords(t, c, "chaos.sign")) != 1 {
		t.Errorf("a refused sign minted: stdout %q, %d chaos.sign records", r.Stdout, len(auditRecords(t, c, "chaos.sign")))
	}
	v := c.must(exitcode.Error, "chaos", "verify", old)
	oneErrorLine(t, v, "rejected by the freeze check", "frozen by alice@laptop")
	if !strings.Contains(v.Stdout, "freeze     FAIL") {
		t.Errorf("verify does not show the freeze check failing:\n%s", v.Stdout)
	}

	// The lift, at .400 of a second; sign in that second waits for the next.
	c.Clock.Advance(time.Minute + 400*time.Millisecond)
	withLocalStore(t, c, func(st *sqlite.Store, log *audit.Log) {
		freezetest.Lift(t, st, log, "bob@laptop", "not us", c.Clock.Now())
	})
	liftSecond := c.Clock.Now().Unix()
	v = c.must(exitcode.Error, "chaos", "verify", old, "-o", "json")
	rep := clitest.Decode[verifyReport](t, v.Stdout)
	for _, ch := range rep.Checks {
		if ch.Check == "freeze" && (ch.Outcome != "fail" || ch.Field != "iat" || !strings.Contains(ch.Reason, "never honoured")) {
			t.Errorf("a header minted before the freeze, after the lift: %+v", ch)
		}
	}
	done := make(chan clitest.Result, 1)
	go func() { done <- c.run("chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value") }()
	wait.Until(t, "sign waits for the second after the lift", func() bool { return c.Clock.Waiters() > 0 })
	select {
	case r := <-done:
		t.Fatalf("sign did not wait: exit %d %s", r.Code, r.Stderr)
	default:
	}
	c.Clock.Advance(600 * time.Millisecond)
	r = <-done
	if r.Code != 0 {
		t.Fatalf("sign after the lift: exit %d\n%s", r.Code, r.Stderr)
	}
	fresh := strings.TrimSpace(r.Stdout)
	if !strings.Contains(fresh, ";iat="+strconv.FormatInt(liftSecond+1, 10)+";") {
		t.Errorf("the header minted after the lift is %q, want iat %d", fresh, liftSecond+1)
	}
	c.must(0, "chaos", "verify", fresh)
}

// A freeze item that cannot be read mints nothing (fail closed): exit 5,
// saying why and what to do.
func TestSignFailsClosedWhenTheFreezeCannotBeRead(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	keyFile := filepath.Join(t.TempDir(), "chaos.key")
	if err := os.WriteFile(keyFile, []byte("mBF25rnK64kVrnZvUfTAuTL/yXgo4h9WxZtZe/tTU04=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must(0, "config", "set-context", "down", "--table", "t", "--region", "us-east-1",
		"--endpoint-url", "http://127.0.0.1:1", "--static-credentials", "--use")
	r := c.must(exitcode.Unavailable, "chaos", "sign", "--target", "openai", "--fault", "error", "--key-file", keyFile)
	oneErrorLine(t, r, freeze.Key, "no chaos header is minted that cannot be checked against the fleet's freeze", "127.0.0.1:1")
	if r.Stdout != "" {
		t.Errorf("minted with the freeze unread: %q", r.Stdout)
	}
}
