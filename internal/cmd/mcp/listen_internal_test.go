package mcp

import (
	"net"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// What a listener bound decides, not the name it was given.
func TestBoundAddressMustBeLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "[::1]:8080": true, "192.168.1.20:8080": false, "[2001:db8::1]:80": false} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		err = boundLoopback("localhost:8080", a)
		if (err == nil) != ok || (err != nil && exitcode.Of(err) != exitcode.Usage) {
			t.Errorf("%s: %v", addr, err)
		}
	}
}
