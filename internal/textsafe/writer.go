package textsafe

import (
	"bytes"
	"io"
	"sync"
	"unicode/utf8"
)

// Writer applies the [Text] rule to everything written through it: newline
// and tab pass, every other unsafe character reaches the underlying writer as
// a visible escape. A UTF-8 character split across two writes is held until
// it is complete (at most three bytes); [Writer.Flush] writes a held
// incomplete character as escaped bytes. Clean writes go through unchanged,
// without copying. A Writer is safe for concurrent use.
type Writer struct {
	w    io.Writer
	mu   sync.Mutex
	held []byte
	buf  bytes.Buffer
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Raw returns the writer under w when w is a [Writer], else w itself. Only
// code that writes its own terminal control (the dashboard, a progress line,
// color) uses it, and that code renders every value it did not write itself
// with [Line] or [Text].
func Raw(w io.Writer) io.Writer {
	if sw, ok := w.(*Writer); ok {
		return sw.w
	}
	return w
}

// Write implements io.Writer. It reports len(p) written when the underlying
// writer took everything.
func (sw *Writer) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	total := len(p)
	if h := len(sw.held); h > 0 {
		// Try to complete the held character with the bytes it needs.
		cand := append(sw.held, p[:min(len(p), utf8.UTFMax-h)]...)
		if !utf8.FullRune(cand) { // p was too short: keep holding
			sw.held = cand
			return total, nil
		}
		r, n := utf8.DecodeRune(cand)
		if r == utf8.RuneError && n == 1 {
			// The held bytes cannot start a character: escape them, and
			// read p from its start.
			cand, n = cand[:h], h
		}
		if err := sw.emitAll(cand[:n]); err != nil {
			return 0, err
		}
		p = p[n-h:]
		sw.held = sw.held[:0]
	}
	// Hold back an incomplete character at the end.
	if tail := incompleteTail(p); tail > 0 {
		sw.held = append(sw.held, p[len(p)-tail:]...)
		p = p[:len(p)-tail]
	}
	if err := sw.emitAll(p); err != nil {
		return 0, err
	}
	return total, nil
}

// Flush writes a held incomplete character (as escaped bytes).
func (sw *Writer) Flush() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if len(sw.held) == 0 {
		return nil
	}
	err := sw.emitAll(sw.held)
	sw.held = sw.held[:0]
	return err
}

// emitAll writes p, which ends on a character boundary or with bytes that
// can never become one, escaping what is unsafe.
func (sw *Writer) emitAll(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	i := scan(p, true, utf8.DecodeRune)
	if i < 0 {
		_, err := sw.w.Write(p)
		return err
	}
	sw.buf.Reset()
	sw.buf.Write(p[:i])
	appendEscaped(&sw.buf, string(p[i:]), true)
	_, err := sw.w.Write(sw.buf.Bytes())
	return err
}

// incompleteTail returns how many bytes at the end of p start a UTF-8
// character that the next write may complete.
func incompleteTail(p []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(p); k++ {
		c := p[len(p)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(p[len(p)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}
