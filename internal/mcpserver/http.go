package mcpserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// SessionIdleTimeout closes an HTTP session no request has used for this
// long: a client that went away does not hold its session for ever.
const SessionIdleTimeout = 30 * time.Minute

// Handler serves s over streamable HTTP behind [Authorize]. The SDK's
// DNS-rebinding protection (a loopback request naming another host is
// refused) stays on; a browser's cross-origin request (a page of another
// site posting to the loopback port, by its Sec-Fetch-Site or Origin) is
// refused with 403 before the token is even looked at; idle sessions close
// after [SessionIdleTimeout].
func Handler(s *Server, token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.Server },
		&mcp.StreamableHTTPOptions{SessionTimeout: SessionIdleTimeout})
	return http.NewCrossOriginProtection().Handler(Authorize(token, h))
}
