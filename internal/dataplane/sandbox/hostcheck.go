package sandbox

import (
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lazyre"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
)

// loopbackHosts are the Host names /mcp and /admin always accept: the
// loopback forms a browser on the same machine sends.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// hostGuard refuses requests whose Host header names a host the sandbox
// does not answer to. It defeats DNS rebinding: a web page served from
// evil.example that re-points its own name at 127.0.0.1 makes the browser
// send "Host: evil.example", never "Host: localhost", so it cannot reach the
// token-guarded endpoints with the documented default tokens. The port is
// not compared: an SSH tunnel or port forward legitimately changes it, and
// rebinding is about the name.
type hostGuard struct {
	mu      sync.RWMutex
	allowed map[string]bool
}

func newHostGuard(listen string, extra []string) *hostGuard {
	g := &hostGuard{allowed: map[string]bool{}}
	for _, h := range loopbackHosts {
		g.allowed[h] = true
	}
	for _, h := range extra {
		g.allowed[normalHost(h)] = true
	}
	g.addListen(listen)
	return g
}

// addListen accepts the listen address's own host, unless it is the
// unspecified address (0.0.0.0, ::), which is no name a client can send.
func (g *hostGuard) addListen(addr string) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		return
	}
	g.mu.Lock()
	g.allowed[normalHost(host)] = true
	g.mu.Unlock()
}

// allows reports whether a request's Host may reach a guarded endpoint. A
// request with no Host at all (HTTP/1.0, or a handler called in process)
// is allowed: browsers always send one.
func (g *hostGuard) allows(hostHeader string) bool {
	if hostHeader == "" {
		return true
	}
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.allowed[normalHost(host)]
}

// wrap guards next.
func (g *hostGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.allows(r.Host) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf(
				"Host %q is not an address of this sandbox: use http://127.0.0.1, http://localhost or http://[::1] (or start it with --allowed-host NAME)", r.Host)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// normalHost lower-cases a host name and drops a trailing dot and IPv6
// brackets, so "LOCALHOST.", "localhost" and "[::1]" compare as names.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(h, "]"), "["), ".")
	return strings.ToLower(h)
}

var hostNameRE = lazyre.New(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)

// validHost reports whether h is a bare host name or IP address (IPv6 with
// or without brackets), as an allowed host must be.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return !strings.Contains(h, "%") // no zone: a Host header never carries one
	}
	return len(h) <= 253 && hostNameRE.MatchString(h)
}

// UsesDefaultTokens reports whether any principal holds one of the
// documented default tokens ([DefaultPrincipals]), which anyone who has read
// the docs knows.
func UsesDefaultTokens(ps []Principal) bool {
	for _, p := range ps {
		for _, d := range DefaultPrincipals() {
			if p.Token == d.Token {
				return true
			}
		}
	}
	return false
}

// IsLoopback reports whether a listen address ("127.0.0.1:8787",
// "[::1]:0", "localhost:8787") only accepts connections from this machine.
// An empty host (":8787", every interface), an unspecified address or any
// other name is not loopback.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
