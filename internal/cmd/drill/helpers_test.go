package drill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// fleet is a small stand-in data plane for command tests: it reads the
// breaker overrides from the local context's store (the same SQLite file
// koshactl writes) and serves /metrics and /search.
type fleet struct {
	srv *httptest.Server
	ov  *breaker.Overrides

	mu     sync.Mutex
	opened map[string]bool
}

func newFleet(t *testing.T, clk clock.Clock) *fleet {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(os.Getenv("KOSHACTL_STATE_DIR"), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	f := &fleet{ov: breaker.NewOverrides(st, clk), opened: map[string]bool{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fleet) state(dep string) int {
	if forced, _ := f.ov.ForcedOpen(context.Background(), dep); forced.Active {
		return 3
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opened[dep] {
		return 2
	}
	return 0
}

func (f *fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/metrics":
		for _, dep := range []string{"openai", "core-api"} {
			fmt.Fprintf(w, "kosha_breaker_state{dependency=%q,instance=\"gw-1\"} %d\n", dep, f.state(dep))
		}
	case "/search":
		s := f.state("openai")
		_ = json.NewEncoder(w).Encode(map[string]any{"result": map[string]any{"degraded": s >= 2}})
	default:
		http.NotFound(w, r)
	}
}

// overrides opens the local context's store to look at overrides.
func overrides(t *testing.T, clk clock.Clock) *breaker.Overrides {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(os.Getenv("KOSHACTL_STATE_DIR"), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return breaker.NewOverrides(st, clk)
}

// force forces an override on the local store as another writer would:
// through the lever, with its audit record, in one transaction.
func force(t *testing.T, clk clock.Clock, req levertest.Req) breaker.ForceResult {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(os.Getenv("KOSHACTL_STATE_DIR"), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	res, _, err := levertest.Force(context.Background(), st, clk, audit.NewLog(st, clk, "local"), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.TrimLeft(content, "\n")), 0o600); err != nil { //nolint:gosec // G703: a name the test chose, in its own temp dir
		t.Fatal(err)
	}
	return p
}

func readJournal(t *testing.T, path string) drill.Journal {
	t.Helper()
	b := []byte(readFile(t, path))
	var j drill.Journal
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("journal is not JSON: %v\n%s", err, b)
	}
	return j
}

type clockReal = clock.Real

func tryJournal(path string) (drill.Journal, error) {
	var j drill.Journal
	b, err := os.ReadFile(path)
	if err != nil {
		return j, err
	}
	return j, json.Unmarshal(b, &j)
}

// waitForRunningStep polls the journal at path until the step id is
// running: the state a test interrupts or recovers a live run in. It fails
// the test if the process exits first, and kills it after wait.Ceiling.
func waitForRunningStep(t *testing.T, cmd *exec.Cmd, exited <-chan error, path, id string, log fmt.Stringer) {
	t.Helper()
	if err := wait.For(t.Context(), "the drill to run step "+id, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the drill ended before step %s ran: %v\n%s", id, err, log)
		default:
		}
		j, err := tryJournal(path)
		if err != nil {
			return false
		}
		for _, st := range j.Steps {
			if st.ID == id && st.Status == drill.StatusRunning {
				return true
			}
		}
		return false
	}); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("%v:\n%s", err, log)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
