package iostreams

import (
	"bufio"
	"context"
	"io"
)

// ReadAll reads r to its end, at most limit+1 bytes (so a caller can tell
// "more than limit" from "exactly limit"), and returns early with ctx's
// error when ctx ends first. A read from a terminal or a pipe cannot be
// interrupted, so it runs on its own goroutine; after a cancellation that
// goroutine stays blocked until the read returns (or the process exits), and
// what it reads then is dropped. Use it for stdin, where the command ends
// right after a cancellation.
func ReadAll(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	return readCtx(ctx, func() ([]byte, error) { return io.ReadAll(io.LimitReader(r, limit+1)) })
}

// ReadLine reads one line from r (without its "\n" or "\r\n" ending),
// returning early with ctx's error when ctx ends first, as [ReadAll] does.
// At end of input a final line without a newline is returned with a nil
// error; an empty one with io.EOF.
func ReadLine(ctx context.Context, r *bufio.Reader) (string, error) {
	b, err := readCtx(ctx, func() ([]byte, error) {
		line, err := r.ReadString('\n')
		if err != nil && line != "" {
			err = nil
		}
		return []byte(line), err
	})
	if err != nil {
		return "", err
	}
	s := string(b)
	if n := len(s); n > 0 && s[n-1] == '\n' {
		s = s[:n-1]
		if n := len(s); n > 0 && s[n-1] == '\r' {
			s = s[:n-1]
		}
	}
	return s, nil
}

func readCtx(ctx context.Context, read func() ([]byte, error)) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1) // the reader never blocks on a caller that left
	go func() {
		b, err := read()
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
