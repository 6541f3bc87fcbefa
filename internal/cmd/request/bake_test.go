package request_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// fleetGauges serves four instances' openai breaker_state gauges, as set.
type fleetGauges struct {
	mu     sync.Mutex
	values [4]int
}

func (g *fleetGauges) set(v ...int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	copy(g.values[:], v)
}

func (g *fleetGauges) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	b.WriteString("# TYPE kosha_breaker_state gauge\n")
	for i, v := range g.values {
		fmt.Fprintf(&b, "kosha_breaker_state{dependency=\"openai\",instance=\"gw-%d\"} %d\n", i+1, v)
	}
	_, _ = w.Write([]byte(b.String()))
}

// Under four eyes a clear is a request; the approver who applies it with
// --bake watches the fleet, and when the breaker re-opens on 3 of 4
// instances puts the override back at once: the policy's breaker.rollback,
// permitted for the clear's own actor (four-eyes.cedar's bake-rollback),
// with no request of its own. The trail reads force, clear, put-back and
// the later clear. A bake that cannot work is refused before anything is
// approved.
func TestApproveBakePutsBackAnApprovedClearUnderFourEyes(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes on production")
	g := &fleetGauges{}
	g.set(3, 3, 3, 3)
	ts := httptest.NewServer(g)
	t.Cleanup(ts.Close)
	metricsURL := ts.URL + "/metrics"

	req := clitest.Decode[requestResult](t, w.as("alice", exitcode.Pending, "breaker", "force-open", "openai", "--reason", "provider outage INC-7", "--for", "2h", "-o", "json").Stdout)
	// --bake on a request that is not a clear: refused, nothing approved.
	if r := w.as("bob", exitcode.Usage, "request", "approve", req.RequestID, "--sha256", req.SHA256, "--bake", "5m", "--metrics-url", metricsURL); !strings.Contains(r.Stderr, "is a breaker.force-open: drop --bake") {
		t.Errorf("--bake on a force's request: %s", r.Stderr)
	}
	w.as("admin", exitcode.NotFound, "breaker", "get", "openai")
	w.as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256)
	forced := clitest.Decode[struct {
		ExpiresAt time.Time `json:"expires_at"`
	}](t, w.as("admin", 0, "breaker", "get", "openai", "-o", "json").Stdout)
	w.Clock.Advance(time.Second)

	// alice's clear --bake is a request: nothing is cleared, so nothing is
	// baked, and she is told who can bake it.
	r := w.as("alice", exitcode.Pending, "breaker", "clear", "openai", "--reason", "provider recovered?", "--bake", "5m", "--metrics-url", metricsURL, "-o", "json")
	clear := clitest.Decode[requestResult](t, r.Stdout)
	if !strings.Contains(r.Stderr, "nothing is baked: the approval that applies it can bake it, koshactl request approve "+clear.RequestID+" --bake 5m") {
		t.Errorf("clear --bake under four eyes does not say the bake is the approver's:\n%s", r.Stderr)
	}
	// A bake longer than max-override, or with no source it can read, is
	// refused before the approval: the request stays pending.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/metrics"
	dead.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--bake", "25h", "--metrics-url", metricsURL}, exitcode.Usage, "longer than this context's max-override"},
		{[]string{"--bake", "5m", "--metrics-url", deadURL}, exitcode.Unavailable, "nothing was approved"},
		{[]string{"--metrics-url", metricsURL}, exitcode.Usage, "--metrics-url only applies with --bake"},
	} {
		r := w.as("bob", tc.code, append([]string{"request", "approve", clear.RequestID, "--sha256", clear.SHA256}, tc.args...)...)
		if !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%v: %s, want %q", tc.args, r.Stderr, tc.want)
		}
	}
	w.as("admin", 0, "breaker", "get", "openai")

	// bob applies the clear and bakes: the fleet's breakers re-open on 3
	// of the 4 instances, so the override goes back.
	g.set(2, 2, 1, 0)
	r = w.as("bob", exitcode.RolledBack, "request", "approve", clear.RequestID, "--sha256", clear.SHA256, "--bake", "5m", "--metrics-url", metricsURL)
	if !strings.Contains(r.Stdout, "Approved and applied request "+clear.RequestID) || !strings.Contains(r.Stdout, "BAKE FAILED") ||
		!strings.Contains(r.Stdout, "re-opened on 3 of 4 instances (gw-1, gw-2, gw-3)") || !strings.Contains(r.Stdout, "ROLLED BACK openai") {
		t.Errorf("approve --bake does not tell the clear, the re-open and the put-back:\n%s\n%s", r.Stdout, r.Stderr)
	}
	got := clitest.Decode[struct {
		Reason    string    `json:"reason"`
		ExpiresAt time.Time `json:"expires_at"`
	}](t, w.as("admin", 0, "breaker", "get", "openai", "-o", "json").Stdout)
	if got.Reason != "provider outage INC-7" || !got.ExpiresAt.Equal(forced.ExpiresAt) {
		t.Errorf("override put back as %+v, want the forced one's reason and expiry %s", got, forced.ExpiresAt)
	}

	// The later clear: carol's break-glass.
	w.Clock.Advance(time.Second)
	w.as("carol", 0, "breaker", "clear", "openai", "--reason", "provider recovered for real", "--break-glass")

	// The put-back is written at the clear's instant (the first read
	// tripped), so the trail is read by what each record is, not by time.
	var force, clr, put, later *audit.Record
	n := 0
	for _, rec := range w.audit() {
		if rec.Subject != "breaker#openai" {
			continue
		}
		n++
		rec := rec
		switch {
		case rec.Action == "breaker.force-open" && rec.RollbackOf == "":
			force = &rec
		case rec.Action == "breaker.force-open":
			put = &rec
		case rec.Approval != nil && rec.Approval.Request == clear.RequestID:
			clr = &rec
		case rec.Action == "breaker.clear" && rec.Approval.BreakGlass():
			later = &rec
		}
	}
	if n != 4 || force == nil || clr == nil || put == nil || later == nil {
		t.Fatalf("%d records on breaker#openai: force %v, clear %v, put-back %v, later clear %v; want the four", n, force, clr, put, later)
	}
	if clr.Action != "breaker.clear" || clr.Actor != bobARN || put.RollbackOf != clr.ID || put.Actor != bobARN || put.Time.Before(clr.Time) ||
		put.Approval == nil || put.Approval.Decision != audit.DecisionAllowed || strings.Join(put.Approval.Policies, ",") != "bake-rollback" {
		t.Errorf("the put-back %+v (approval %+v), want bob's, naming the clear %+v, allowed by bake-rollback", put, put.Approval, clr)
	}
	// A force like any other: its record keeps what it does to the tools.
	tools := func(im *audit.Impact) (out []string) {
		for _, tr := range im.Tools {
			out = append(out, tr.Tool+"/"+tr.Behaviour)
		}
		return out
	}
	if put.Impact == nil || force.Impact == nil || len(put.Impact.Tools) == 0 || !slices.Equal(tools(put.Impact), tools(force.Impact)) {
		t.Errorf("the put-back's impact %+v, want the force's %+v", put.Impact, force.Impact)
	}

	// Announced loudly, and no request was made for the put-back.
	rolled := false
	for _, ev := range w.rcv.Events(t) {
		rolled = rolled || (ev.Action == "breaker.rollback" && ev.Outcome == "rolled back" && strings.HasPrefix(ev.Detail, "ROLLED BACK") &&
			strings.Contains(strings.Join(ev.Impact, "\n"), "search_knowledge_base"))
	}
	if !rolled {
		t.Error("the put-back was not announced as rolled back, with the tools it degrades")
	}
	if l := w.as("admin", 0, "request", "list"); strings.Contains(l.Stdout, "pending") {
		t.Errorf("a request is pending after the put-back:\n%s", l.Stdout)
	}
}
