package lever

import (
	"context"
	"io"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
)

// Forcing is the optional capability of a kind whose levers force
// dependencies open or clear them (the breaker override): its changes
// change what the platform's tools do. A service with an [Assessor] tells
// that impact while it plans ([Planned.Impact]), and each record of the
// change keeps its target's part.
type Forcing interface {
	// Forces says which dependencies c forces open (and for how long, at
	// now) or clears; ok is false for an action that does neither.
	Forces(c Change, now time.Time) (f Forces, ok bool)
}

// Forces is what a change does to dependencies' breakers.
type Forces struct {
	// Dependencies are forced open, or cleared with Clear, in the
	// change's order.
	Dependencies []string
	// For is how long the overrides hold (0: until cleared); zero for a
	// clear.
	For time.Duration
	// Clear is true when the change ends the overrides.
	Clear bool
}

// Impact is what a change does to the platform beyond its items: the tools
// it degrades and, with a metrics source, their call rates
// (internal/impact's report; its JSON is the `impact` section of
// docs/contracts/degradation-matrix.md). A dry run, a protected context's
// prompt and a change request show it; each record of the change keeps its
// target's part.
type Impact interface {
	// Lines says it in short lines for a prompt, a notification or a
	// request (not escaped: the sink does).
	Lines() []string
	// Render writes it for a terminal, under a change's result (every
	// value escaped).
	Render(w io.Writer) error
	// Record is target's part as its audit record keeps it (nil: none).
	Record(target string) *audit.Impact
}

// Assessor tells the impact of a change's forces (internal/impact's, with
// the context's metrics source, wired by the command factory). It never
// fails: a source that cannot be read leaves the matrix's impact, which
// says so.
type Assessor interface {
	Assess(ctx context.Context, f Forces) Impact
}

// WithImpact returns the service telling the impact of every change of a
// [Forcing] kind with a, while it reads the targets.
func (s *Service) WithImpact(a Assessor) *Service {
	c := *s
	c.impact = a
	return &c
}

// assess starts telling c's impact, when c's kind forces dependencies and
// the service has an assessor; wait returns it (nil: none).
func (s *Service) assess(ctx context.Context, kind Kind, c Change, now time.Time) (wait func() Impact) {
	fk, ok := kind.(Forcing)
	if !ok || s.impact == nil {
		return func() Impact { return nil }
	}
	f, ok := fk.Forces(c, now)
	if !ok || len(f.Dependencies) == 0 {
		return func() Impact { return nil }
	}
	done := make(chan Impact, 1)
	go func() { done <- s.impact.Assess(ctx, f) }()
	return func() Impact { return <-done }
}

// Impact tells c's impact without planning it (a change request shown to
// the person who approves it): nil when c's kind forces nothing, the
// action neither forces nor clears, or the service tells no impact.
func (s *Service) Impact(ctx context.Context, c Change) Impact {
	spec, _, ok := s.kinds.Action(c.Action)
	if !ok {
		return nil
	}
	kind, err := s.kinds.Kind(spec.Name)
	if err != nil {
		return nil
	}
	return s.assess(ctx, kind, c, s.clock.Now())()
}
