package procbench

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// State is a local state directory (a local context's embedded store) that
// a process benchmark loads once per test binary, however often the
// benchmark runs (make bench runs each six times), and that the package's
// TestMain removes.
type State struct {
	once sync.Once
	dir  string
	err  error
}

// Env is the environment of a koshactl process on the state directory,
// loaded by load on first use: this process's environment, the state
// directory and a config file in it that does not exist (the built-in
// local context).
func (s *State) Env(b *testing.B, load func(tb testing.TB, dir string)) []string {
	b.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "koshactl-bench-"); s.err == nil {
			load(b, s.dir)
		}
	})
	if s.err != nil {
		b.Fatal(s.err)
	}
	return append(os.Environ(), "KOSHACTL_STATE_DIR="+s.dir, "KOSHACTL_CONFIG="+filepath.Join(s.dir, "config.yaml"))
}

// Remove removes the state directory, if it was made; TestMain calls it
// after the benchmarks ran.
func (s *State) Remove() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
