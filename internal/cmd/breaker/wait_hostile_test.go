package breaker_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// gaugeEndpoint serves /metrics: first (when set) on the first scrape,
// then, on every later one.
type gaugeEndpoint struct {
	mu          sync.Mutex
	first, then string
	hits        int
	srv         *httptest.Server
	url         string
}

func serveGauges(t *testing.T, first, then string) *gaugeEndpoint {
	t.Helper()
	g := &gaugeEndpoint{first: first, then: then}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.hits++
		body := g.then
		if g.hits == 1 && g.first != "" {
			body = g.first
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(g.srv.Close)
	g.url = g.srv.URL + "/metrics"
	return g
}

// runDriven runs koshactl in the background and advances the CLI's fake
// clock a quarter second at a time whenever the command waits on it.
func runDriven(t *testing.T, e *clitest.Env, args ...string) clitest.Result {
	t.Helper()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.Run(args...) }()
	for {
		var r clitest.Result
		ended := false
		wait.Until(t, "koshactl "+strings.Join(args, " ")+" to wait on the clock or end", func() bool {
			select {
			case r = <-done:
				ended = true
				return true
			default:
				return e.Clock.Waiters() > 0
			}
		})
		if ended {
			return r
		}
		e.Clock.Advance(250 * time.Millisecond)
	}
}

// Issue 35: against gauges answering NaN and +Inf, 3.4, samples from 1970,
// every instance twice, or one instance of four, force-open --wait printed
// "Confirmed openai: forced on 2 of 2" and exited 0. None of them confirms:
// exit 11 (unconfirmed), the change written, and the doubt named.
func TestForceOpenWaitIsNotFooledByHostileGauges(t *testing.T) {
	t.Parallel()
	const head = "# TYPE kosha_breaker_state gauge\n"
	line := func(instance, value string) string {
		return fmt.Sprintf("kosha_breaker_state{dependency=\"openai\",instance=%q} %s\n", instance, value)
	}
	four := func(v string) string {
		return head + line("gw-1", v) + line("gw-2", v) + line("gw-3", v) + line("gw-4", v)
	}
	tests := []struct {
		name        string
		first, then string
		says        string
	}{
		{"NaN and +Inf", "", head + line("gw-1", "NaN") + line("gw-2", "+Inf") + line("gw-3", "3") + line("gw-4", "3"),
			"forced on 2 of 4 instances, unconfirmed (unknown: gw-1 reports NaN, not a state; gw-2 reports +Inf, not a state)"},
		{"3.4", "", head + line("gw-1", "3.4") + line("gw-2", "3") + line("gw-3", "3") + line("gw-4", "3"),
			"gw-1 reports 3.4, not a state"},
		{"samples from 1970", "", four("3 1000"), "gw-1 sample taken at 1970-01-01T00:00:01Z, before the change"},
		{"a duplicated series", "", four("0") + strings.TrimPrefix(four("3"), head), "gw-4 reported 2 times in one read, a duplicated series"},
		{"one of four left", four("0"), head + line("gw-1", "3"), "forced on 1 of 4 instances, unconfirmed (unknown: gw-2 stopped reporting at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := clitest.New(t, clitest.Parallel())
			g := serveGauges(t, tt.first, tt.then)
			r := runDriven(t, e, "breaker", "force-open", "openai", "--reason", "hostile gauges", "--wait", "--metrics-url", g.url)
			if r.Code != exitcode.Unconfirmed {
				t.Fatalf("exit %d, want %d (unconfirmed)\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Unconfirmed, r.Stdout, r.Stderr)
			}
			if strings.Contains(r.Stdout, "Confirmed") || !strings.Contains(r.Stdout, "Not confirmed openai") ||
				!strings.Contains(r.Stderr, "did not confirm it within 11s") || !strings.Contains(r.Stderr, tt.says) {
				t.Errorf("want %q named\nstdout:\n%s\nstderr:\n%s", tt.says, r.Stdout, r.Stderr)
			}
			e.MustRun(0, "breaker", "get", "openai")
		})
	}
}
