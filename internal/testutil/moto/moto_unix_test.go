//go:build unix

package moto

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStopKillsProcessGroupAndFreesPort(t *testing.T) {
	s, err := Launch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still signalable after Stop (kill -0: %v)", pid, err)
	}
	addr := strings.TrimPrefix(s.Endpoint, "http://")
	var d net.Dialer
	if c, err := d.DialContext(t.Context(), "tcp", addr); err == nil {
		_ = c.Close() // the test fails anyway: the connection should not exist
		t.Errorf("%s still accepts connections after Stop", addr)
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil { //nolint:gosec // G306: a test script must be executable
		t.Fatal(err)
	}
}

// TestLaunchRunsTheOverrideAndShowsItsDyingWords: $KOSHACTL_MOTO_SERVER is
// the server run, and a server that exits before answering is reported with
// its output.
func TestLaunchRunsTheOverrideAndShowsItsDyingWords(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "fake_moto_server")
	writeScript(t, fake, `echo "fake server got $*"; echo "ModuleNotFoundError: No module named 'flask'" >&2; exit 3`)
	t.Setenv(EnvServer, fake)
	s, err := Launch(t.Context())
	if err == nil {
		_ = s.Stop()
		t.Fatal("Launch of a server that exits at once succeeded")
	}
	for _, want := range []string{"exited before answering", "fake server got -H 127.0.0.1 -p ", "No module named 'flask'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestFindServerResolvesAPyenvShim: a pyenv shim on PATH is replaced by the
// script pyenv says it runs; moto_server elsewhere on PATH is run as found,
// even when pyenv is installed.
func TestFindServerResolvesAPyenvShim(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "versions", "3.11", "bin", "moto_server")
	writeScript(t, real, "exit 0")
	writeScript(t, filepath.Join(root, "bin", "pyenv"), `[ "$1 $2" = "which moto_server" ] && echo `+real)
	shim := filepath.Join(root, "shims", "moto_server")
	writeScript(t, shim, "exit 0")
	venv := filepath.Join(root, "venv", "bin", "moto_server")
	writeScript(t, venv, "exit 0")
	t.Setenv(EnvServer, "")

	t.Setenv("PATH", filepath.Join(root, "shims")+string(os.PathListSeparator)+filepath.Join(root, "bin"))
	got, err := FindServer()
	if err != nil {
		t.Fatal(err)
	}
	if got != real {
		t.Errorf("FindServer with a pyenv shim on PATH = %s, want %s", got, real)
	}

	t.Setenv("PATH", filepath.Join(root, "venv", "bin")+string(os.PathListSeparator)+filepath.Join(root, "bin"))
	if got, err := FindServer(); err != nil || got != venv {
		t.Errorf("FindServer with a venv's moto_server on PATH = %s, %v; want %s", got, err, venv)
	}
}
