package cmdutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Prompter asks the operator questions on a terminal.
type Prompter interface {
	// Input shows prompt and returns the line typed, without its newline.
	// It returns ctx's error as soon as ctx ends (Ctrl-C), even while the
	// operator has typed nothing.
	Input(ctx context.Context, prompt string) (string, error)
}

// LinePrompter prompts on Out and reads lines from In. The prompt is
// rendered with [textsafe.Line]: it can name a context, a dependency or the
// actor holding an override, and none of that may drive the terminal.
type LinePrompter struct {
	In  io.Reader
	Out io.Writer
	r   *bufio.Reader
}

// Input implements [Prompter].
func (p *LinePrompter) Input(ctx context.Context, prompt string) (string, error) {
	if p.r == nil {
		p.r = bufio.NewReader(p.In)
	}
	fmt.Fprint(p.Out, textsafe.Line(prompt))
	line, err := iostreams.ReadLine(ctx, p.r)
	if err != nil {
		return "", fmt.Errorf("read answer: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
