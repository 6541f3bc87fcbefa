package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// Fault is what the proxy does with the answer of a request it hits.
type Fault uint8

const (
	// Reset forwards the request, waits for the server's answer (so the
	// server has applied it), then resets the client's connection (TCP RST)
	// without sending a byte of the answer.
	Reset Fault = iota + 1
	// Withhold forwards the request, waits for the server's answer, then
	// sends nothing until the client hangs up (its own timeout, or its
	// context canceled). The connection is then closed.
	Withhold
	// Stall holds the request itself: it is never forwarded, so the server
	// never applies it, and nothing is sent until the client hangs up. A
	// test cancels a write while it is "in flight" this way and knows it did
	// not land ([Proxy.WaitStalled]).
	Stall
	// ServerError forwards the request, waits for the server's answer (so
	// the server has applied it), then answers HTTP 500 with DynamoDB's
	// InternalServerError instead: the client cannot tell whether it
	// landed (the SDK retries it).
	ServerError
	// Hold keeps the request, not yet forwarded, until [Proxy.Release];
	// then it is forwarded and answered as usual. A test orders two
	// clients this way: a retry held while another client's change lands
	// ([Proxy.WaitHeld]).
	Hold
)

func (f Fault) String() string {
	switch f {
	case Reset:
		return "reset"
	case Withhold:
		return "withhold"
	case Stall:
		return "stall"
	case ServerError:
		return "500"
	case Hold:
		return "hold"
	}
	return fmt.Sprintf("Fault(%d)", uint8(f))
}

// rule loses the answer of the nth request of op.
type rule struct {
	op    string
	nth   int
	fault Fault
}

// Proxy is a fault-injecting HTTP proxy in front of one server.
type Proxy struct {
	target string
	srv    *http.Server
	ln     net.Listener
	client *http.Client

	mu    sync.Mutex
	rules []rule
	// seen counts the requests of each operation that reached the proxy.
	seen map[string]int
	// lost counts, per operation, the answers lost (applied, never delivered).
	lost map[string]int
	// stalled counts, per operation, the requests held and never forwarded.
	stalled map[string]int
	// held counts, per operation, the requests [Hold] kept; gate is closed
	// by Release to let them go.
	held map[string]int
	gate chan struct{}
	// changed is closed and replaced whenever seen or lost change.
	changed chan struct{}
}

// Start runs a proxy to target (an http:// endpoint) on a free loopback
// port until the test ends.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: listen: %v", err)
	}
	p := &Proxy{
		target:  strings.TrimRight(target, "/"),
		ln:      ln,
		client:  &http.Client{Transport: &http.Transport{DisableCompression: true}},
		seen:    map[string]int{},
		lost:    map[string]int{},
		stalled: map[string]int{},
		held:    map[string]int{},
		gate:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: wait.Ceiling}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.srv.Serve(ln)
	}()
	tb.Cleanup(func() {
		_ = p.srv.Close()
		<-done
		p.client.CloseIdleConnections()
	})
	return p
}

// URL is the endpoint to give the client instead of the server's.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Lose makes the proxy lose the answer of the nth request (counting from 1,
// from the proxy's start) of DynamoDB operation op ("PutItem",
// "DeleteItem", "GetItem", ...): the server applies it, the client never
// hears. Several rules may be set, on one operation or several.
func (p *Proxy) Lose(op string, nth int, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, rule{op: op, nth: nth, fault: f})
}

// LoseNext is Lose counted from now: k = 1 loses the answer of the next
// request of op, 2 the one after it.
func (p *Proxy) LoseNext(op string, k int, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, rule{op: op, nth: p.seen[op] + k, fault: f})
}

// Seen returns how many requests of op reached the proxy.
func (p *Proxy) Seen(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[op]
}

// Lost returns how many answers of op were lost.
func (p *Proxy) Lost(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost[op]
}

// WaitLost blocks until n answers of op were applied by the server and lost
// (for Withhold: applied and held), or the test's wait ceiling passes.
func (p *Proxy) WaitLost(tb testing.TB, op string, n int) {
	tb.Helper()
	p.waitCount(tb, p.lost, "answer(s) lost", op, n)
}

// Stalled returns how many requests of op were held and never forwarded.
func (p *Proxy) Stalled(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled[op]
}

// WaitStalled blocks until n requests of op are (or were) held by [Stall],
// or the test's wait ceiling passes.
func (p *Proxy) WaitStalled(tb testing.TB, op string, n int) {
	tb.Helper()
	p.waitCount(tb, p.stalled, "request(s) stalled", op, n)
}

// WaitHeld blocks until n requests of op are (or were) kept by [Hold],
// or the test's wait ceiling passes.
func (p *Proxy) WaitHeld(tb testing.TB, op string, n int) {
	tb.Helper()
	p.waitCount(tb, p.held, "request(s) held", op, n)
}

// Release lets every request [Hold] keeps go on to the server.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.gate)
	p.gate = make(chan struct{})
}

// waitCount blocks until counts[op] >= n (counts guarded by p.mu).
func (p *Proxy) waitCount(tb testing.TB, counts map[string]int, what, op string, n int) {
	tb.Helper()
	timer := time.NewTimer(wait.Ceiling)
	defer timer.Stop()
	for {
		p.mu.Lock()
		got, ch := counts[op], p.changed
		p.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			tb.Fatalf("faultproxy: %d %s %s after %s, want %d", got, op, what, wait.Ceiling, n)
		}
	}
}

// operation is the DynamoDB operation a request names in X-Amz-Target
// ("DynamoDB_20120810.PutItem" gives "PutItem").
func operation(r *http.Request) string {
	t := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		return t[i+1:]
	}
	return t
}

// bump records a change under p.mu and wakes the waiters.
func (p *Proxy) bump() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// hit counts r and returns the fault for it (0: pass the answer on).
func (p *Proxy) hit(op string) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[op]++
	p.bump()
	for _, rl := range p.rules {
		if rl.op == op && rl.nth == p.seen[op] {
			return rl.fault
		}
	}
	return 0
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	op := operation(r)
	fault := p.hit(op)
	switch fault {
	case Stall:
		p.stall(w, op)
		return
	case Hold:
		p.mu.Lock()
		p.held[op]++
		gate := p.gate
		p.bump()
		p.mu.Unlock()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		case <-time.After(wait.Ceiling):
			http.Error(w, "faultproxy: held past the wait ceiling, never released", http.StatusBadGateway)
			return
		}
		fault = 0
	case Reset, Withhold, ServerError:
		// After the server's answer, below.
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "faultproxy: read request: "+err.Error(), http.StatusBadGateway)
		return
	}
	// The forwarded request does not end with the client's: the server must
	// apply it even when the client hangs up first.
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body)) //nolint:gosec // G704: the target is the test's own loopback server
	if err != nil {
		http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	resp, err := p.client.Do(out) //nolint:gosec // G704: the target is the test's own loopback server
	if err != nil {
		http.Error(w, "faultproxy: forward: "+err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		http.Error(w, "faultproxy: read answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	if fault == ServerError {
		p.mu.Lock()
		p.lost[op]++
		p.bump()
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"faultproxy: the answer was replaced by a server error"}`)
		return
	}
	if fault != 0 {
		p.lose(w, r, op, fault)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// stall holds a request, never forwarded, until the client hangs up.
func (p *Proxy) stall(w http.ResponseWriter, op string) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("faultproxy: hijack: %v", err))
	}
	p.mu.Lock()
	p.stalled[op]++
	p.bump()
	p.mu.Unlock()
	_ = conn.SetReadDeadline(time.Now().Add(wait.Ceiling))
	_, _ = io.Copy(io.Discard, conn)
	_ = conn.Close()
}

// lose drops the answer the server gave to r.
func (p *Proxy) lose(w http.ResponseWriter, r *http.Request, op string, fault Fault) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("faultproxy: hijack: %v", err))
	}
	p.mu.Lock()
	p.lost[op]++
	p.bump()
	p.mu.Unlock()
	if fault == Withhold {
		// Wait for the client to hang up: a read returns when it closes.
		_ = conn.SetReadDeadline(time.Now().Add(wait.Ceiling))
		_, _ = io.Copy(io.Discard, conn)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST, not FIN
	}
	_ = conn.Close()
}
