package sandbox

import (
	"crypto/sha256"
	"strings"
	"sync"
)

// principals maps bearer tokens to principals. Tokens are held only as
// SHA-256 digests, so a heap dump or a debug print shows none.
type principals struct {
	mu     sync.RWMutex
	byHash map[[sha256.Size]byte]Principal
}

func newPrincipals(ps []Principal) *principals {
	t := &principals{byHash: make(map[[sha256.Size]byte]Principal, len(ps))}
	for _, p := range ps {
		t.add(p)
	}
	return t
}

// add registers p (the traffic generator adds its clients).
func (t *principals) add(p Principal) {
	h := sha256.Sum256([]byte(p.Token))
	p.Token = ""
	t.mu.Lock()
	t.byHash[h] = p
	t.mu.Unlock()
}

// authenticate returns the principal of an Authorization header value
// ("Bearer <token>").
func (t *principals) authenticate(header string) (Principal, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, false
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return Principal{}, false
	}
	t.mu.RLock()
	p, ok := t.byHash[sha256.Sum256([]byte(token))]
	t.mu.RUnlock()
	return p, ok
}
