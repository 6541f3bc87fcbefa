package sandbox_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/vectors"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// matrixVectors is the part of docs/contracts/vectors/degradation-matrix.json
// a data plane shows: the tools and the rows.
type matrixVectors struct {
	Tools []impact.Tool `json:"tools"`
	Rows  []impact.Row  `json:"rows"`
}

func loadMatrix(t *testing.T) matrixVectors {
	t.Helper()
	b, err := os.ReadFile(vectors.Path(t, "degradation-matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m matrixVectors
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// toolArgs are valid arguments of every tool.
var toolArgs = map[string]any{
	sandbox.ToolSearchKnowledgeBase: map[string]any{"query": "how do I raise a dispute"},
	sandbox.ToolScreenEntity:        map[string]any{"name": "Ada Lovelace"},
	sandbox.ToolRaiseDispute:        map[string]any{"transaction_id": "txn-1", "reason": "fraud"},
	sandbox.ToolFlagTransaction:     map[string]any{"transaction_id": "txn-2", "reason": "odd"},
	sandbox.ToolGetServiceHealth:    nil,
}

// checkEveryTool calls every tool on instance until its answer is what the
// row says (the effect it names, or unaffected), within the tests' wait
// bound: the fleet's deadlines are real time, so on a loaded machine an
// answer may be a timeout of the moment (core-api out of budget) before it
// is the row's; a tool that never answers as the row says fails, with its
// last answer.
func checkEveryTool(t *testing.T, h *harness, row impact.Row, instance string) {
	t.Helper()
	for _, tool := range sandbox.Tools() {
		var last error
		var answer string
		if err := wait.For(t.Context(), tool+" answers as the row says", func() bool {
			r := h.call(agent, tool, toolArgs[tool], instance, nil)
			last, answer = row.Effect(tool).Check(r.IsError, r.Structured), describe(r)
			return last == nil
		}); err != nil {
			t.Errorf("%s down: %v\n  answer: %s", row.Dependency, last, answer)
		}
	}
}

// notModelled are the rows the sandbox cannot make happen, and why; every
// other row is checked.
var notModelled = map[string]string{
	impact.CognitoJWKS: "the sandbox's principals are static bearer tokens: there are no signing keys to fetch or cache",
}

// TestDegradationMatrixVectors is the reference data plane passing the
// degradation matrix's vectors: the tools are the sandbox's; a row with a
// breaker is made by forcing the override (the lever), and every tool
// answers as the row says on every instance; a row without one has no
// breaker (its override is read by nobody) and is made by the dependency
// itself going down, then checked the same way.
func TestDegradationMatrixVectors(t *testing.T) {
	t.Parallel()
	m := loadMatrix(t)
	var names []string
	for _, tool := range m.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, sandbox.Tools()) {
		t.Fatalf("the matrix's tools %v are not the sandbox's %v", names, sandbox.Tools())
	}
	down := map[string]func(t *testing.T, row impact.Row){
		impact.OpenAI:       forcedRow,
		impact.ScreeningSim: forcedRow,
		impact.CoreAPI:      forcedRow,
		impact.Postgres:     postgresDown,
		impact.SQS:          sqsDown,
		impact.DynamoDB:     dynamoDown,
	}
	// One sandbox answers what the rows say of the fleet's structure, and
	// the rows it cannot make happen; each other row runs its own.
	h := start(t, testConfig())
	for _, row := range m.Rows {
		t.Run(row.Dependency, func(t *testing.T) {
			t.Parallel()
			for _, in := range h.srv.Fleet().Instances() {
				d, ok := in.Dependency(row.Dependency)
				if has := ok && d.Breaker != nil && d.Force != nil; has != row.Breaker {
					t.Fatalf("%s: %s has a breaker obeying overrides: %t, the matrix says %t", in.Name(), row.Dependency, has, row.Breaker)
				}
			}
			if why, ok := notModelled[row.Dependency]; ok {
				if row.Breaker || len(row.Effects) > 0 {
					t.Fatalf("%s is not modeled (%s), but its row changes tools or has a breaker: model it", row.Dependency, why)
				}
				checkEveryTool(t, h, row, "gw-1") // nothing down: what the row says of the tools (none) holds
				return
			}
			run, ok := down[row.Dependency]
			if !ok {
				t.Fatalf("the matrix has a row %s the sandbox neither models nor lists as not modeled", row.Dependency)
			}
			run(t, row)
		})
	}
}

// forcedRow forces the row's dependency with an override, as an operator
// would, and checks every tool on every instance once all report forced.
func forcedRow(t *testing.T, row impact.Row) {
	h := start(t, testConfig())
	lg := audit.NewLog(h.store, nil, "test")
	if _, _, err := levertest.Force(context.Background(), h.store, nil, lg, levertest.Req{Dependency: row.Dependency, Reason: "matrix vectors",
		Actor: "t", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	n := len(h.srv.Fleet().Instances())
	wait.Until(t, "every instance forced", func() bool { return allAre(h.states(row.Dependency), n, 3) })
	for _, in := range h.srv.Fleet().Instances() {
		checkEveryTool(t, h, row, in.Name())
	}
}

// postgresDown fails every PostgreSQL call: core-api answers 503 naming
// postgres until its breaker (the one in front of postgres) opens, and from
// then on the data tools fail fast as the row says.
func postgresDown(t *testing.T, row impact.Row) {
	cfg := testConfig()
	// Open long enough that the checks run before it half-opens.
	cfg.Resilience.Dependency(sandbox.CoreAPI).Breaker.OpenDuration = time.Hour
	h := start(t, cfg)
	sim, _ := h.srv.Sim(sandbox.Postgres)
	if err := sim.SetKnob(sandbox.Knob{Fault: chaos.FaultError, P: 1}); err != nil {
		t.Fatal(err)
	}
	in, _ := h.srv.Fleet().Instance("gw-1")
	for range 40 {
		if in.BreakerState(sandbox.CoreAPI) == circuit.Open {
			break
		}
		h.call(agent, sandbox.ToolRaiseDispute, toolArgs[sandbox.ToolRaiseDispute], "gw-1", nil)
	}
	if st := in.BreakerState(sandbox.CoreAPI); st != circuit.Open {
		t.Fatalf("gw-1's core-api breaker is %s after 40 failing writes, want open", st)
	}
	checkEveryTool(t, h, row, "gw-1")
}

// sqsDown fails every SQS publish: the writes answer as usual and their
// events wait in the outbox until SQS is back.
func sqsDown(t *testing.T, row impact.Row) {
	h := start(t, testConfig())
	sim, ok := h.srv.Sim(sandbox.SQS)
	if !ok {
		t.Fatal("the sandbox simulates no SQS")
	}
	if err := sim.SetKnob(sandbox.Knob{Fault: chaos.FaultError, P: 1}); err != nil {
		t.Fatal(err)
	}
	checkEveryTool(t, h, row, "gw-1")
	wait.Until(t, "the relay fails to publish, and both events wait", func() bool {
		s := h.srv.Outbox().Stats()
		return s.PublishErrors > 0 && s.Pending == 2 && s.Published == 0
	})
	sim.ClearKnob()
	wait.Until(t, "SQS back: both events published", func() bool {
		s := h.srv.Outbox().Stats()
		return s.Pending == 0 && s.Published == 2
	})
}

// downStore is the context's store while DynamoDB is down: every call
// fails as an unreachable DynamoDB does, once down is set.
type downStore struct {
	sandbox.Store
	down atomic.Bool
}

func (s *downStore) Get(ctx context.Context, pk string) (store.Item, error) {
	if s.down.Load() {
		return nil, store.ErrUnavailable
	}
	return s.Store.Get(ctx, pk)
}

func (s *downStore) Put(ctx context.Context, it store.Item, c store.Condition) error {
	if s.down.Load() {
		return store.ErrUnavailable
	}
	return s.Store.Put(ctx, it, c)
}

func (s *downStore) Transact(ctx context.Context, c store.Change) error {
	if s.down.Load() {
		return store.ErrUnavailable
	}
	return s.Store.Transact(ctx, c)
}

func (s *downStore) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	if s.down.Load() {
		return func(yield func(store.Item, error) bool) { yield(nil, store.ErrUnavailable) }
	}
	return s.Store.Scan(ctx, q)
}

// dynamoDown takes the store away after the start: every tool answers as
// usual (rate limiting fails open, counted in its metric), and an override
// written meanwhile reaches no instance (each keeps the last it read).
func dynamoDown(t *testing.T, row impact.Row) {
	var ds *downStore
	h := start(t, testConfig(), func(d *sandbox.Deps) {
		ds = &downStore{Store: d.Store}
		d.Store = ds
	})
	ds.down.Store(true)
	checkEveryTool(t, h, row, "gw-1")
	if v := h.metric("kosha_rate_limit_decisions_total", map[string]string{"outcome": "fail_open_error"}); v < float64(len(sandbox.Tools())) {
		t.Errorf("fail-open rate-limit decisions %v, want one per tool call", v)
	}
	lg := audit.NewLog(ds.Store, nil, "test")
	if _, _, err := levertest.Force(context.Background(), ds.Store, nil, lg, levertest.Req{Dependency: sandbox.OpenAI, Reason: "unread",
		Actor: "t", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	n := len(h.srv.Fleet().Instances())
	wait.Until(t, "every instance failed to read the override", func() bool {
		fams := h.scrape()
		for _, in := range h.srv.Fleet().Instances() {
			if v, _ := value(fams, "kosha_breaker_override_read_errors_total", map[string]string{"dependency": sandbox.OpenAI, "instance": in.Name()}); v < 1 {
				return false
			}
		}
		return true
	})
	if states := h.states(sandbox.OpenAI); !allAre(states, n, 0) {
		t.Errorf("openai's gauges %v with the store down: an override nobody could read moved them", states)
	}
	ds.down.Store(false)
	wait.Until(t, "the store back: the override read", func() bool { return allAre(h.states(sandbox.OpenAI), n, 3) })
}
