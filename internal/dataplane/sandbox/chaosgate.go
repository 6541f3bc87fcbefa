package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
)

// Key cache periods.
const (
	// keyTTL is how long a verification key is used before it is read from
	// the source again (so a key rotated out stops verifying).
	keyTTL = 5 * time.Minute
	// missInterval is the least time between two source reads caused by
	// unknown kids, so a flood of made-up kids costs one read per interval.
	missInterval = 5 * time.Second
)

type cachedKey struct {
	key chaos.Key
	at  time.Time
}

// keyCache is a [chaos.Keyring] in front of a slower one (a key file, the
// local key, Secrets Manager): known kids are served from memory for keyTTL,
// and unknown kids trigger at most one source read per missInterval. A
// rotation is picked up on the first header signed with the new key.
type keyCache struct {
	src   chaos.Keyring
	clock clock.Clock

	mu       sync.RWMutex
	keys     map[string]cachedKey
	lastMiss time.Time
}

var _ chaos.Keyring = (*keyCache)(nil)

func newKeyCache(src chaos.Keyring, clk clock.Clock) *keyCache {
	return &keyCache{src: src, clock: clk, keys: map[string]cachedKey{}}
}

// Current returns the source's signing key.
func (c *keyCache) Current(ctx context.Context) (chaos.Key, error) { return c.src.Current(ctx) }

// ByKID returns the key with id kid from the cache, or from the source.
func (c *keyCache) ByKID(ctx context.Context, kid string) (chaos.Key, error) {
	now := c.clock.Now()
	c.mu.RLock()
	k, ok := c.keys[kid]
	c.mu.RUnlock()
	if ok && now.Sub(k.at) < keyTTL {
		return k.key, nil
	}
	if !ok {
		c.mu.RLock()
		recent := now.Sub(c.lastMiss) < missInterval
		c.mu.RUnlock()
		if recent {
			return chaos.Key{}, chaos.UnknownKIDError(kid, "the sandbox's chaos keys (read again at most every "+missInterval.String()+")")
		}
	}
	key, err := c.src.ByKID(ctx, kid)
	if err != nil {
		if !errors.Is(err, chaos.ErrUnknownKID) {
			if ok {
				return k.key, nil // the source failed: keep using what we had
			}
			return chaos.Key{}, err
		}
		c.mu.Lock()
		c.lastMiss = now
		delete(c.keys, kid)
		c.mu.Unlock()
		return chaos.Key{}, err
	}
	c.mu.Lock()
	c.keys[kid] = cachedKey{key: key, at: now}
	c.mu.Unlock()
	return key, nil
}

// chaosGate decides, per request, whether a chaos header is honored: only
// with chaos enabled, when the verifier passes it (syntax, target, kid,
// signature, expiry, the 15-minute cap), when the instance's freeze reading
// lets it through (docs/contracts/freeze.md), and for an operator. Anything
// else is ignored, counted and audited.
type chaosGate struct {
	enabled  bool
	verifier *chaos.Verifier
	audit    *auditWriter
	m        *metrics
	clock    clock.Clock
}

func newChaosGate(enabled bool, keys chaos.Keyring, targets []chaos.Target, clk clock.Clock, a *auditWriter, m *metrics) (*chaosGate, error) {
	g := &chaosGate{enabled: enabled, audit: a, m: m, clock: clk}
	if !enabled {
		return g, nil
	}
	if keys == nil {
		return nil, fmt.Errorf("%w: chaos is enabled but no chaos key source was given", ErrInvalidConfig)
	}
	v, err := chaos.NewVerifier(newKeyCache(keys, clk), chaos.Options{Clock: clk, Targets: targets})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	g.verifier = v
	return g, nil
}

// plan returns the fault plan of a request's chaos header on instance in,
// or nil when there is none or it is ignored (more than one header is:
// chaos.HeaderValue).
func (g *chaosGate) plan(ctx context.Context, header http.Header, p Principal, in *Instance) *FaultPlan {
	value, repeated := chaos.HeaderValue(header)
	if value == "" {
		return nil
	}
	if !g.enabled {
		h, err := chaos.Parse(value)
		rej := chaos.Rejection{Check: chaos.Check(IgnoredDisabled), Reason: "chaos is not enabled on this sandbox (start it with --chaos)"}
		if err == nil {
			rej = withFields(rej, &h)
		}
		g.ignore(p, IgnoredDisabled, rej)
		return nil
	}
	if repeated != nil {
		h, _ := chaos.Parse(value)
		g.ignore(p, string(chaos.CheckSyntax), chaos.NewRejection(h, repeated))
		return nil
	}
	h, err := g.verifier.Verify(ctx, value)
	if err != nil {
		reason := IgnoredKeyring
		var ce *chaos.CheckError
		if errors.As(err, &ce) {
			reason = string(ce.Check)
		}
		g.ignore(p, reason, chaos.NewRejection(h, err))
		return nil
	}
	// The freeze check, last of the header's checks: as if its signature
	// were invalid while the fleet is frozen, and for good for a header
	// issued before the end of the last freeze. An instance that ignores
	// the store (the test knob) skips it, as a data plane that does not
	// obey the freeze would.
	if in.control != nil {
		now := g.clock.Now()
		if err := chaos.CheckFreezeRule(&h, in.freezeReading(ctx, string(h.Target), now), now); err != nil {
			g.ignore(p, string(chaos.CheckFreeze), chaos.NewRejection(h, err))
			return nil
		}
	}
	if p.Role != RoleOperator {
		g.ignore(p, IgnoredRole, withFields(chaos.Rejection{Check: chaos.Check(IgnoredRole),
			Reason: fmt.Sprintf("client %s has role %s; chaos headers are honored only for the operator role", p.Client, p.Role)}, &h))
		return nil
	}
	g.m.honored.WithLabelValues(string(h.Target), h.Fault.String()).Inc()
	g.audit.appliedOnce(p.Client, in.name, &h)
	return &FaultPlan{Target: string(h.Target), Fault: h.Fault, Ms: h.Ms, P: h.P.Float64(), JTI: h.JTI}
}

func (g *chaosGate) ignore(p Principal, reason string, rej chaos.Rejection) {
	g.m.ignored.WithLabelValues(reason).Inc()
	g.audit.ignored(p.Client, reason, rej)
}

// withFields copies what parsed of h into r.
func withFields(r chaos.Rejection, h *chaos.Header) chaos.Rejection {
	r.KID, r.Target, r.IAT, r.Exp, r.JTI = h.KID, h.Target, h.IAT, h.Exp, h.JTI
	if h.Fault.Valid() {
		r.Fault = h.Fault.String()
	}
	return r
}
