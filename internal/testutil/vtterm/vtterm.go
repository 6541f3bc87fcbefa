package vtterm

import (
	"bytes"
	"fmt"
	"io"
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
	var screen string
	if err := wait.For(t.Context(), fmt.Sprintf("the screen to show %q", texts), func() bool {
		term.mu.Lock()
		_, _ = term.emu.Write(term.out.Bytes())
		term.out.Reset()
		term.mu.Unlock()
		screen = term.emu.String()
		ok := true
		for _, text := range texts {
			ok = ok && strings.Contains(screen, text)
		}
		return ok
	}); err != nil {
		t.Fatalf("%v; the last screen:\n%s", err, screen)
	}
}
