// Package iostreams carries a command's standard streams and what is known
// about them (terminal or not, color allowed or not), so commands print the
// same way in production and in tests backed by buffers.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// IOStreams are a command's input and outputs.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	stderrTTY bool
	noColor   bool
	noHeaders bool
}

// System returns the process's streams.
func System() *IOStreams {
	_, noColor := os.LookupEnv("NO_COLOR")
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdinTTY:  isTTY(os.Stdin),
		stdoutTTY: isTTY(os.Stdout),
		stderrTTY: isTTY(os.Stderr),
		noColor:   noColor || os.Getenv("TERM") == "dumb",
	}
}

func isTTY(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Test returns streams backed by buffers (stdin, stdout, stderr), none a terminal.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, noColor: true}, in, out, errOut
}

// IsStdinTTY reports whether stdin is a terminal (so koshactl may prompt).
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether stdout is a terminal (human output).
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal (progress output).
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// CanPrompt reports whether interactive confirmation is possible.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stderrTTY }

// ColorEnabled reports whether output may use color (a terminal, no NO_COLOR).
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.noColor }

// SetColorEnabled allows or forbids color (--no-color forbids it; tests
// allow it). Color still needs stdout to be a terminal.
func (s *IOStreams) SetColorEnabled(v bool) { s.noColor = !v }

// NoHeaders reports whether tables print without their header line.
func (s *IOStreams) NoHeaders() bool { return s.noHeaders }

// SetNoHeaders drops the header line of tables (--no-headers).
func (s *IOStreams) SetNoHeaders(v bool) { s.noHeaders = v }

// SetStdinTTY marks stdin as a terminal or not (tests).
func (s *IOStreams) SetStdinTTY(v bool) { s.stdinTTY = v }

// SetStdoutTTY marks stdout as a terminal or not (tests).
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }

// SetStderrTTY marks stderr as a terminal or not (tests).
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = v }
