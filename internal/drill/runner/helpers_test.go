package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/store"
)

// env is a drill test environment (see drilltest.Env) that runs drills
// with the runner.
type env struct{ *drilltest.Env }

func newEnv(t testing.TB) *env { return &env{drilltest.NewEnv(t)} }

// newEnvOn is newEnv on the store s.
func newEnvOn(t testing.TB, s store.Store) *env { return &env{drilltest.NewEnvOn(t, s)} }

// parse parses src, failing the test on problems.
func parse(t testing.TB, src string) *drill.Drill {
	t.Helper()
	return drilltest.Parse(t, kinds.Builtin(), src)
}

// recorder keeps every event's kind and a rendered line, and can act on
// events (cancel on a step's start).
type recorder struct {
	mu     sync.Mutex
	events []Event
	on     func(Event)
}

func (r *recorder) Report(ev Event) {
	r.mu.Lock()
	cp := ev
	cp.Journal = nil
	if ev.Step != nil {
		s := *ev.Step
		cp.Step = &s
	}
	r.events = append(r.events, cp)
	on := r.on
	r.mu.Unlock()
	if on != nil {
		on(ev)
	}
}

func (e *env) run(ctx context.Context, d *drill.Drill, reps ...Reporter) (*drill.Journal, string) {
	e.T.Helper()
	var log bytes.Buffer
	r := &Runner{Deps: e.Deps, Reporters: append([]Reporter{&LiveLog{W: &log}}, reps...)}
	j := r.Run(ctx, d)
	return j, log.String()
}

func (e *env) auditRecords() []audit.Record {
	e.T.Helper()
	l, err := e.Audit.List(context.Background(), audit.Query{})
	if err != nil {
		e.T.Fatal(err)
	}
	recs := l.Records
	return recs
}

func journalJSON(t testing.TB, j *drill.Journal) string {
	t.Helper()
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stepByID(t testing.TB, j *drill.Journal, id string) drill.StepRecord {
	t.Helper()
	for _, s := range j.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("journal has no step %q", id)
	return drill.StepRecord{}
}

var errBoom = errors.New("boom")

func parseFloat(t testing.TB, s string) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return f
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
