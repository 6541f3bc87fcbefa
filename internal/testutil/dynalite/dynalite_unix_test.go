//go:build unix

package dynalite

import (
	"context"
	"errors"
	"net"
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
