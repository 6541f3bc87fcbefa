package impact

import (
	"context"
	"errors"
	"slices"
)

// Tools returns the design's tools, in the order the LLD lists them: the
// contract vectors list them.
func Tools() []Tool { return slices.Clone(tools) }

// LastRead waits for the assessor's newest read to end and returns its
// error: a test that warmed a read knows it ended before a change asks.
func (a *Assessor) LastRead(ctx context.Context) error {
	a.mu.Lock()
	rd := a.last
	a.mu.Unlock()
	if rd == nil {
		return errors.New("no read started")
	}
	select {
	case <-rd.done:
		return rd.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
