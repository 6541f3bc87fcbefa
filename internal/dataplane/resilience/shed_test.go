package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

func TestShedderAdmitsUpToMaxInFlight(t *testing.T) {
	s := NewLoadShedder(0, nil)
	if s.MaxInFlight() != 64 {
		t.Fatalf("default MaxInFlight %d, want 64", s.MaxInFlight())
	}
	for i := range 64 {
		if err := s.Enter(); err != nil {
			t.Fatalf("request %d shed below the limit: %v", i+1, err)
		}
	}
	err := s.Enter()
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindOverloaded || re.RetryAfter != time.Second {
		t.Fatalf("65th request: %v, want Overloaded with Retry-After 1s", err)
	}
	if s.InFlight() != 64 || s.Shed() != 1 {
		t.Fatalf("InFlight %d Shed %d", s.InFlight(), s.Shed())
	}
	s.Leave()
	if err := s.Enter(); err != nil {
		t.Fatalf("a freed slot was not reused: %v", err)
	}
}

func TestShedderMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewLoadShedder(64, nil)
		release := make(chan struct{})
		var served sync.WaitGroup
		h := s.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			w.WriteHeader(http.StatusNoContent)
		}))
		codes := make(chan int, 64)
		for range 64 {
			served.Go(func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", nil))
				codes <- rec.Code
			})
		}
		synctest.Wait() // 64 requests in flight
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
			t.Fatalf("65th request: %d, Retry-After %q; want 503 and 1", rec.Code, rec.Header().Get("Retry-After"))
		}
		var body ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != "overloaded" || body.RetryAfter != 1 {
			t.Fatalf("body %s (%v)", rec.Body, err)
		}
		close(release)
		served.Wait()
		close(codes)
		for c := range codes {
			if c != http.StatusNoContent {
				t.Fatalf("an admitted request got %d", c)
			}
		}
		if s.InFlight() != 0 {
			t.Fatalf("InFlight %d after every request ended", s.InFlight())
		}
	})
}

func newToolDep(t *testing.T, name string, clk clock.Clock) *Dependency {
	t.Helper()
	d, err := NewDependency(DependencySettings{Name: name, Breaker: &circuit.Settings{WindowSize: 2, OpenDuration: 30 * time.Second}},
		Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func openBreaker(t *testing.T, b *circuit.Breaker) {
	t.Helper()
	for range 2 {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		b.Done(p, circuit.Failure)
	}
}

func TestStartTool(t *testing.T) {
	clk := clocktest.NewFake(time.Now())
	shed := NewLoadShedder(64, clk)
	ctxWith := func(remaining time.Duration) (context.Context, context.CancelFunc) {
		return context.WithDeadline(context.Background(), clk.Now().Add(remaining))
	}

	t.Run("budget sets the deadline", func(t *testing.T) {
		ctx, cancel, err := shed.StartTool(context.Background(), Tool{Name: "search_knowledge_base", Budget: 8 * time.Second})
		defer cancel()
		if d, _ := ctx.Deadline(); err != nil || !d.Equal(clk.Now().Add(8*time.Second)) {
			t.Fatalf("deadline %v, err %v", d, err)
		}
	})
	t.Run("remaining exactly the minimum starts", func(t *testing.T) {
		parent, c := ctxWith(300 * time.Millisecond)
		defer c()
		_, cancel, err := shed.StartTool(parent, Tool{Name: "get_transactions", Budget: 8 * time.Second})
		defer cancel()
		if err != nil {
			t.Fatalf("300ms left with a 300ms minimum: %v", err)
		}
	})
	t.Run("remaining below the minimum fails with deadline_exceeded", func(t *testing.T) {
		parent, c := ctxWith(300*time.Millisecond - time.Nanosecond)
		defer c()
		_, cancel, err := shed.StartTool(parent, Tool{Name: "get_transactions", Budget: 8 * time.Second})
		defer cancel()
		if !errors.Is(err, ErrDeadlineExceeded) || KindOf(err).Code() != "deadline_exceeded" {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("custom minimum", func(t *testing.T) {
		parent, c := ctxWith(time.Second)
		defer c()
		_, cancel, err := shed.StartTool(parent, Tool{Name: "search_knowledge_base", MinBudget: 2 * time.Second})
		defer cancel()
		if !errors.Is(err, ErrDeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("only dependency open fails with dependency_unavailable", func(t *testing.T) {
		core := newToolDep(t, CoreAPI, clk)
		openBreaker(t, core.Breaker)
		clk.Advance(10 * time.Second)
		_, cancel, err := shed.StartTool(context.Background(), Tool{Name: "get_transactions", Dependencies: []*Dependency{core}})
		defer cancel()
		var re *Error
		if !errors.As(err, &re) || re.Kind.Code() != "dependency_unavailable" || re.Dependency != CoreAPI || re.RetryAfter != 20*time.Second {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("only dependency forced open fails", func(t *testing.T) {
		core := newToolDep(t, CoreAPI, clk)
		core.Breaker.ForceOpen()
		_, cancel, err := shed.StartTool(context.Background(), Tool{Name: "get_transactions", Dependencies: []*Dependency{core}})
		defer cancel()
		if !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("half-open only dependency is tried", func(t *testing.T) {
		core := newToolDep(t, CoreAPI, clk)
		openBreaker(t, core.Breaker)
		clk.Advance(30 * time.Second)
		_, cancel, err := shed.StartTool(context.Background(), Tool{Name: "get_transactions", Dependencies: []*Dependency{core}})
		defer cancel()
		if err != nil {
			t.Fatalf("half-open dependency refused at tool start: %v", err)
		}
	})
	t.Run("one of two dependencies open is not shed", func(t *testing.T) {
		core, openai := newToolDep(t, CoreAPI, clk), newToolDep(t, OpenAI, clk)
		openBreaker(t, openai.Breaker)
		_, cancel, err := shed.StartTool(context.Background(), Tool{Name: "search_knowledge_base", Dependencies: []*Dependency{core, openai}})
		defer cancel()
		if err != nil {
			t.Fatalf("a tool that can degrade was refused: %v", err)
		}
	})
	t.Run("only dependency without a breaker", func(t *testing.T) {
		pg, _ := NewDependency(DependencySettings{Name: Postgres}, Options{})
		_, cancel, err := shed.StartTool(context.Background(), Tool{Name: "report", Dependencies: []*Dependency{pg}})
		defer cancel()
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the override is read at tool start", func(t *testing.T) {
		core := newToolDep(t, CoreAPI, clk)
		core.Force = circuit.NewForceWatcher(core.Breaker, circuit.ForceSourceFunc(
			func(context.Context, string) (breaker.Force, error) { return breaker.Force{Active: true}, nil }),
			circuit.WatcherSettings{})
		_, cancel, err := shed.StartTool(context.Background(), Tool{Name: "get_transactions", Dependencies: []*Dependency{core}})
		defer cancel()
		if !errors.Is(err, circuit.ErrForcedOpen) && !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		err        error
		status     int
		retryAfter string
		code       string
	}{
		{&Error{Kind: KindCircuitOpen, Dependency: CoreAPI, RetryAfter: 1500 * time.Millisecond}, 503, "2", "dependency_unavailable"},
		{&Error{Kind: KindDeadlineExceeded}, 504, "", "deadline_exceeded"},
		{&Error{Kind: KindBulkheadFull, Dependency: OpenAI}, 503, "", "overloaded"},
		{errors.New("boom"), 500, "", "internal"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		WriteError(rec, tt.err)
		var body ErrorBody
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != tt.status || rec.Header().Get("Retry-After") != tt.retryAfter || body.Error != tt.code {
			t.Errorf("WriteError(%v): %d %q %+v", tt.err, rec.Code, rec.Header().Get("Retry-After"), body)
		}
	}
}
