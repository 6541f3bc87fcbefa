package sandbox_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
)

func newInProcess(t *testing.T, cfg sandbox.Config) http.Handler {
	t.Helper()
	cfg.ChaosEnabled = false
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: memstore.New(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler()
}

// serve sends one request with the given Host header, the documented
// default operator token, and returns the status.
func serve(h http.Handler, method, path, host, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(context.Background(), method, path, strings.NewReader(body))
	r.Host = host
	r.Header.Set("Authorization", "Bearer operator-token")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const toolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// A page served from a rebound name (evil.example resolving to 127.0.0.1)
// makes the browser send its own name as Host: the token-guarded endpoints
// refuse it, so the default operator token is no use to it.
func TestForeignHostIsRefusedOnMCPAndAdmin(t *testing.T) {
	t.Parallel()
	h := newInProcess(t, testConfig())
	for _, host := range []string{"evil.example", "evil.example:8787", "127.0.0.1.evil.example:8787", "localhost.evil.example"} {
		for _, c := range []struct{ method, path, body string }{
			{http.MethodPost, sandbox.PathMCP, toolsList},
			{http.MethodPut, sandbox.PathAdminChaos, `{"fault":"error"}`},
			{http.MethodPut, sandbox.PathAdminChaos + "/openai", `{"fault":"error"}`},
			{http.MethodGet, sandbox.PathAdminChaos, ""},
		} {
			w := serve(h, c.method, c.path, host, c.body)
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "--allowed-host") {
				t.Errorf("%s %s Host %s: %d %s, want 403 naming --allowed-host", c.method, c.path, host, w.Code, w.Body)
			}
		}
	}
	// Nothing was changed by the refused PUTs.
	w := serve(h, http.MethodGet, sandbox.PathAdminChaos, "127.0.0.1:8787", "")
	var v struct{ Knob any }
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != http.StatusOK || v.Knob != nil {
		t.Errorf("knob after refused requests: %d %s", w.Code, w.Body)
	}
	// The read-only endpoints take no token and answer any Host.
	for _, p := range []string{sandbox.PathHealth, sandbox.PathStatus, sandbox.PathMetrics} {
		if w := serve(h, http.MethodGet, p, "evil.example", ""); w.Code != http.StatusOK {
			t.Errorf("GET %s Host evil.example: %d", p, w.Code)
		}
	}
}

func TestLoopbackHostsAndConfiguredHostsAreAccepted(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.AllowedHosts = []string{"sandbox.lan", "192.168.1.20"}
	h := newInProcess(t, cfg)
	for _, host := range []string{"127.0.0.1:8787", "localhost:8787", "[::1]:8787", "LOCALHOST", "localhost.:9000", "127.0.0.1",
		"sandbox.lan:8787", "Sandbox.LAN", "192.168.1.20:8787", ""} {
		if w := serve(h, http.MethodPost, sandbox.PathMCP, host, toolsList); w.Code != http.StatusOK {
			t.Errorf("POST /mcp Host %q: %d %s", host, w.Code, w.Body)
		}
	}
	if w := serve(h, http.MethodPost, sandbox.PathMCP, "other.lan", toolsList); w.Code != http.StatusForbidden {
		t.Errorf("a host not configured: %d", w.Code)
	}
}

func TestListenHostIsAccepted(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Listen = "192.168.1.20:8787"
	cfg.Principals = []sandbox.Principal{{Token: "operator-token-not", Client: "ops", Role: sandbox.RoleOperator}}
	h := newInProcess(t, cfg)
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, sandbox.PathMCP, strings.NewReader(toolsList))
	r.Host = "192.168.1.20:8787"
	r.Header.Set("Authorization", "Bearer operator-token-not")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("the listen address's host: %d %s", w.Code, w.Body)
	}
}

func TestDefaultTokensBeyondLoopbackAreRefused(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"0.0.0.0:8787", ":8787", "[::]:8787", "192.168.1.20:8787", "sandbox.lan:8787"} {
		cfg := testConfig()
		cfg.Listen = listen
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "default tokens") || !strings.Contains(err.Error(), "--config") {
			t.Errorf("listen %s with the default tokens: %v", listen, err)
		}
		// One default token among others is still a known token.
		cfg.Principals = append(cfg.Principals[:1:1], sandbox.Principal{Token: "a-long-random-token", Client: "ops-ana", Role: sandbox.RoleOperator})
		if err := cfg.Validate(); err == nil {
			t.Errorf("listen %s with one default token kept: no error", listen)
		}
		cfg.Principals = []sandbox.Principal{{Token: "a-long-random-token", Client: "ops-ana", Role: sandbox.RoleOperator}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("listen %s with own tokens: %v", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:8787", "127.0.0.1:0", "[::1]:8787", "localhost:8787"} {
		cfg := testConfig()
		cfg.Listen = listen
		if err := cfg.Validate(); err != nil {
			t.Errorf("listen %s (loopback) with the default tokens: %v", listen, err)
		}
	}
}

func TestAllowedHostsAreValidated(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "http://sandbox.lan", "sandbox.lan:8787", "sandbox.lan/x", "user@host", "a b", "fe80::1%eth0"} {
		cfg := testConfig()
		cfg.AllowedHosts = []string{h}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "allowed host") {
			t.Errorf("allowed host %q: %v", h, err)
		}
	}
	cfg := testConfig()
	cfg.AllowedHosts = []string{"sandbox.lan", "10.0.0.5", "[fd00::1]", "fd00::2", "box."}
	if err := cfg.Validate(); err != nil {
		t.Errorf("valid allowed hosts: %v", err)
	}
}
