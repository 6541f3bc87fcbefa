package vtterm

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// Terminal is what a full-screen view draws on: 80 by 24.
type Terminal struct {
	keys *io.PipeWriter
	mu   sync.Mutex
	out  bytes.Buffer
	emu  *vt.Emulator
}

// New returns a terminal and the streams a command draws on it with
// (stdin, stdout and stderr TTYs; stderr is the returned buffer).
func New(t testing.TB) (*Terminal, *iostreams.IOStreams, *bytes.Buffer) {
	pr, pw := io.Pipe()
	term := &Terminal{keys: pw, emu: vt.NewEmulator(80, 24)}
	// Not a real tty: the renderer relies on LF meaning CR LF.
	_, _ = term.emu.WriteString(ansi.SetModeLineFeedNewLine)
	// The emulator's answers to terminal queries go back to the program, as
	// a terminal's would.
	go func() { _, _ = io.Copy(pw, term.emu) }()
	t.Cleanup(func() { _ = term.emu.InputPipe().(io.Closer).Close(); _ = pw.Close() })
	errOut := &bytes.Buffer{}
	ios := &iostreams.IOStreams{In: pr, Out: term, ErrOut: errOut}
	ios.SetStdinTTY(true)
	ios.SetStdoutTTY(true)
	ios.SetStderrTTY(true)
	return term, ios, errOut
}

// Write is the program's output.
func (term *Terminal) Write(p []byte) (int, error) {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.Write(p)
}

// Press types keys.
func (term *Terminal) Press(keys string) {
	_, _ = term.keys.Write([]byte(keys))
}

// WaitFor polls the screen until it shows every text, and fails the test
// with the last screen when it does not within the wait's bound.
func (term *Terminal) WaitFor(t testing.TB, texts ...string) {
	t.Helper()
	term.waitUntil(t, fmt.Sprintf("the screen to show %q", texts), func(screen string) bool {
		ok := true
		for _, text := range texts {
			ok = ok && strings.Contains(screen, text)
		}
		return ok
	})
}

// WaitForMatch polls the screen until re matches it, and returns the
// match's submatches; it fails the test with the last screen when re does
// not match within the wait's bound.
func (term *Terminal) WaitForMatch(t testing.TB, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	term.waitUntil(t, fmt.Sprintf("the screen to match %q", re), func(screen string) bool {
		m = re.FindStringSubmatch(screen)
		return m != nil
	})
	return m
}

// waitUntil polls the screen until shows says it shows what is waited
// for, and fails the test with the last screen when it does not within
// the wait's bound.
func (term *Terminal) waitUntil(t testing.TB, what string, shows func(screen string) bool) {
	t.Helper()
	var screen string
	if err := wait.For(t.Context(), what, func() bool {
		term.mu.Lock()
		_, _ = term.emu.Write(term.out.Bytes())
		term.out.Reset()
		term.mu.Unlock()
		screen = term.emu.String()
		return shows(screen)
	}); err != nil {
		t.Fatalf("%v; the last screen:\n%s", err, screen)
	}
}
