//go:build unix

package sandbox_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
)

// A named pipe is refused at once instead of blocking the command on open.
func TestLoadFileRefusesAFIFO(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	c := sandbox.DefaultConfig()
	if err := c.LoadFile(path, ""); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
}
