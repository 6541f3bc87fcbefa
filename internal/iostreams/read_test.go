package iostreams_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// stuck is a reader that reports its first Read and then blocks until
// released, like a terminal nobody types on.
type stuck struct {
	reading chan struct{}
	release chan struct{}
}

func newStuck() *stuck { return &stuck{reading: make(chan struct{}), release: make(chan struct{})} }

func (s *stuck) Read([]byte) (int, error) {
	close(s.reading)
	<-s.release
	return 0, io.EOF
}

func TestReadAllEndsWhenTheContextEnds(t *testing.T) {
	s := newStuck()
	defer close(s.release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-s.reading; cancel() }()
	if _, err := iostreams.ReadAll(ctx, s, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadAll = %v, want context.Canceled", err)
	}
}

func TestReadAllCapsAndReads(t *testing.T) {
	b, err := iostreams.ReadAll(context.Background(), strings.NewReader("0123456789abc"), 10)
	if err != nil || string(b) != "0123456789a" {
		t.Fatalf("ReadAll = %q, %v; want limit+1 bytes", b, err)
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("one\r\ntwo"))
	for _, want := range []string{"one", "two"} {
		if got, err := iostreams.ReadLine(context.Background(), r); err != nil || got != want {
			t.Fatalf("ReadLine = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := iostreams.ReadLine(context.Background(), r); !errors.Is(err, io.EOF) {
		t.Errorf("at the end: %v", err)
	}
	s := newStuck()
	defer close(s.release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-s.reading; cancel() }()
	if _, err := iostreams.ReadLine(ctx, bufio.NewReader(s)); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadLine on a stuck reader = %v, want context.Canceled", err)
	}
}
