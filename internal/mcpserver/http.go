package mcpserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/mcpserver/sessions"
)

// MinTokenLength is the shortest bearer token the HTTP transport accepts.
const MinTokenLength = 32

// CheckToken refuses a token too short to guess-proof, or one with
// whitespace or controls (a header could not carry it unchanged).
func CheckToken(token string) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("the bearer token has %d characters: use at least %d (e.g. openssl rand -hex 32)", len(token), MinTokenLength)
	}
	for _, r := range token {
		if r <= ' ' || r == 0x7f {
			return errors.New("the bearer token holds a space or a control character: use printable characters only")
		}
	}
	return nil
}

// CheckLoopback refuses a listen address that is not on loopback: the
// HTTP transport serves this machine's clients only.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %v: give HOST:PORT, like 127.0.0.1:8788", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q is not a loopback address: the MCP server listens on 127.0.0.1 or [::1] only", addr)
	}
	return nil
}

// Authorize answers 401, serving nothing, unless a request carries
// "Authorization: Bearer <token>"; the comparison takes the same time
// whatever the header holds (both sides hashed, then compared in constant
// time).
func Authorize(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(want[:], sum[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="koshactl mcp"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler serves s over streamable HTTP behind [Authorize]. The SDK's
// DNS-rebinding protection (a loopback request naming another host is
// refused) stays on; a browser's cross-origin request (a page of another
// site posting to the loopback port, by its Sec-Fetch-Site or Origin) is
// refused with 403 before the token is even looked at; at most lim.Max
// sessions are open at once (a new one beyond is refused: [capSessions]),
// and a session idle for lim.Idle is closed.
func Handler(s *Server, token string, lim sessions.Limits) http.Handler {
	lim = lim.WithDefaults()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.Server },
		&mcp.StreamableHTTPOptions{SessionTimeout: lim.Idle})
	return http.NewCrossOriginProtection().Handler(Authorize(token, capSessions(s, lim, h)))
}

// capSessions refuses a request that would open a session (a POST without
// an Mcp-Session-Id) while lim.Max sessions are open or being opened: 503,
// Retry-After, and a JSON-RPC error naming the cap, how sessions close and
// the flag that raises it. Requests of an open session pass.
func capSessions(s *Server, lim sessions.Limits, next http.Handler) http.Handler {
	var mu sync.Mutex
	opening := 0
	// A flood is logged once a second, with how many were refused since.
	refused, lastLog := 0, time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		open := s.OpenSessions()
		if open+opening >= lim.Max {
			refused++
			now := s.now()
			if n := refused; lastLog.IsZero() || now.Sub(lastLog) >= time.Second {
				refused, lastLog = 0, now
				s.logf("mcp: new session refused (%s since the last such line): %d of %d sessions open (--max-sessions, the context's mcp.max-sessions)",
					human.Count(int64(n), "refusal"), open, lim.Max)
			}
			mu.Unlock()
			msg := fmt.Sprintf("too many MCP sessions: %d of %d are open; close one (DELETE /mcp with its Mcp-Session-Id), "+
				"or wait: a session idle for %s is closed; the server's operator raises the cap with --max-sessions",
				open, lim.Max, human.Duration(lim.Idle))
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": -32000, "message": msg}})
			return
		}
		opening++
		mu.Unlock()
		defer func() {
			mu.Lock()
			opening--
			mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}
