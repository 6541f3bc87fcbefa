package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// trafficClientPrefix starts the client ids of the generator's clients.
const trafficClientPrefix = "traffic-"

// trafficClients returns how many synthetic clients share rps: the
// configured number, or enough that each stays under 75% of its refill.
func trafficClients(t TrafficSettings, refillPerSecond float64) int {
	if t.Clients > 0 {
		return t.Clients
	}
	if t.RPS <= 0 {
		return 0
	}
	return max(3, int(math.Ceil(t.RPS/(0.75*refillPerSecond))))
}

// traffic is the synthetic traffic generator: Poisson arrivals at RPS, each
// a tools/call from one of its clients, picked by the tool mix, sent to the
// sandbox's own endpoint over HTTP like any client.
type traffic struct {
	rps      float64
	tokens   []string
	tools    []string
	cum      []float64 // cumulative weights of tools
	maxIn    int
	m        *metrics
	client   *http.Client
	inFlight atomic.Int64
	seq      atomic.Uint64
}

// newTraffic builds the generator and its principals (random tokens, held
// only in memory).
func newTraffic(t TrafficSettings, refill float64, m *metrics) (*traffic, []Principal, error) {
	n := trafficClients(t, refill)
	g := &traffic{rps: t.RPS, maxIn: t.MaxInFlight, m: m,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: t.MaxInFlight, MaxIdleConns: t.MaxInFlight,
			IdleConnTimeout: 30 * time.Second, DisableCompression: true}}}
	var ps []Principal
	for i := 1; i <= n; i++ {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, nil, fmt.Errorf("generate traffic token: %w", err)
		}
		tok := "traffic-" + hex.EncodeToString(b[:])
		g.tokens = append(g.tokens, tok)
		ps = append(ps, Principal{Token: tok, Client: fmt.Sprintf("%s%d", trafficClientPrefix, i), Role: RoleAgent})
	}
	names := sortedKeys(t.Mix)
	total := 0.0
	for _, name := range names {
		if w := t.Mix[name]; w > 0 {
			total += w
			g.tools = append(g.tools, name)
			g.cum = append(g.cum, total)
		}
	}
	return g, ps, nil
}

// run sends requests to url until ctx ends, then waits for those in flight.
func (g *traffic) run(ctx context.Context, url string, wg *sync.WaitGroup) {
	if g.rps <= 0 || len(g.tokens) == 0 || len(g.tools) == 0 {
		return
	}
	wg.Go(func() {
		var reqs sync.WaitGroup
		defer reqs.Wait()
		defer g.client.CloseIdleConnections()
		next := time.Now()
		for {
			next = next.Add(time.Duration(mrand.ExpFloat64() / g.rps * float64(time.Second))) //nolint:gosec // G404: arrival times, not secrets
			if sleepCtx(ctx, time.Until(next)) != nil {
				return
			}
			if g.inFlight.Load() >= int64(g.maxIn) {
				g.m.trafficDrop.Inc()
				continue
			}
			g.inFlight.Add(1)
			g.m.trafficSent.Inc()
			reqs.Go(func() {
				defer g.inFlight.Add(-1)
				g.send(ctx, url)
			})
		}
	})
}

// send makes one tools/call.
func (g *traffic) send(ctx context.Context, url string) {
	n := g.seq.Add(1)
	tool := g.tools[sort.SearchFloat64s(g.cum, mrand.Float64()*g.cum[len(g.cum)-1])] //nolint:gosec // G404: a tool mix, not a secret
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": n, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": trafficArgs(tool, n)}})
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.tokens[mrand.IntN(len(g.tokens))]) //nolint:gosec // G404: picks a client, not a secret
	resp, err := g.client.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

var (
	trafficQueries = []string{"how do I raise a dispute", "chargeback reason codes", "card fraud signs", "refund timeline",
		"duplicate charge", "sanctions screening", "KYC documents", "flag a transaction for review", "dispute status"}
	trafficNames = []string{"Ada Lovelace", "Grace Hopper", "Ivan Ivanov", "Acme Trading Ltd", "Alan Turing",
		"Blocked Imports LLC", "Katherine Johnson", "Sergei Petrov"}
	trafficReasons = []string{"fraud", "goods not received", "duplicate processing", "unusual location"}
)

// trafficArgs builds plausible arguments for tool.
func trafficArgs(tool string, n uint64) map[string]any {
	switch tool {
	case ToolSearchKnowledgeBase:
		return map[string]any{"query": trafficQueries[n%uint64(len(trafficQueries))]}
	case ToolScreenEntity:
		return map[string]any{"name": trafficNames[n%uint64(len(trafficNames))]}
	case ToolRaiseDispute, ToolFlagTransaction:
		return map[string]any{"transaction_id": fmt.Sprintf("txn-%06d", n%1000000),
			"reason": trafficReasons[n%uint64(len(trafficReasons))], "idempotency_key": fmt.Sprintf("traffic-%d", n)}
	}
	return map[string]any{}
}
