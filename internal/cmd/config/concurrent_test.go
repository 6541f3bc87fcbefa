package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestConcurrentSetContextKeepsEveryContext: twelve set-context calls at
// once on one config file lost updates they reported as success (7 exited
// 0, 5 contexts survived). Under the config's lock each re-reads the file
// before writing it: every call succeeds and every context survives, and
// the lock file is created beside the config, never on it.
func TestConcurrentSetContextKeepsEveryContext(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "config", "set-context", "seed", "--local")
	const n = 12
	var wg sync.WaitGroup
	codes := make([]int, n)
	stderr := make([]string, n)
	for i := range n {
		wg.Go(func() {
			r := e.Run("config", "set-context", fmt.Sprintf("ctx-%02d", i), "--local", "--protected")
			codes[i], stderr[i] = r.Code, r.Stderr
		})
	}
	wg.Wait()
	for i := range n {
		if codes[i] != 0 {
			t.Errorf("set-context ctx-%02d: exit %d: %s", i, codes[i], stderr[i])
		}
	}
	out := e.MustRun(0, "config", "get-contexts").Stdout
	for i := range n {
		if name := fmt.Sprintf("ctx-%02d", i); !strings.Contains(out, name) {
			t.Errorf("context %s lost:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "seed") {
		t.Errorf("context seed lost:\n%s", out)
	}
	// use-context and delete-context take the same lock.
	wg.Go(func() { e.MustRun(0, "config", "delete-context", "ctx-00") })
	wg.Go(func() { e.MustRun(0, "config", "use-context", "ctx-01") })
	wg.Wait()
	out = e.MustRun(0, "config", "get-contexts").Stdout
	if strings.Contains(out, "ctx-00") || !strings.Contains(out, "ctx-02") {
		t.Errorf("after delete-context and use-context at once:\n%s", out)
	}
	matches, _ := filepath.Glob(filepath.Join(e.Dir, "*", "*.lock"))
	matches2, _ := filepath.Glob(filepath.Join(e.Dir, "*.lock"))
	if len(matches)+len(matches2) == 0 {
		entries, _ := os.ReadDir(e.Dir)
		t.Errorf("no lock file beside the config in %s: %v", e.Dir, entries)
	}
}
