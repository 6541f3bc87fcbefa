package sandbox

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/store"
)

// controlReader is an instance's override source: it reads each
// dependency's override together with the freeze item, in one batch read
// (the freeze key added to the override's read, under the same cache
// period: the freeze costs no round trip of its own), and keeps the freeze
// reading the instance's chaos gate acts on (docs/contracts/freeze.md).
type controlReader struct {
	store   getter
	clock   clock.Clock
	logger  *slog.Logger
	refresh time.Duration // the override cache period
	name    string        // the instance, for logs and onChange
	// onChange, when set, is told when the reading starts or stops refusing
	// every chaos header (the chaos_frozen gauge's value).
	onChange func(instance string, frozen bool, at time.Time)

	mu       sync.Mutex
	reading  freeze.Reading
	refuses  bool // reading.RefusesAll as last reported
	reported bool // a reading has been reported once
}

// getter is what the reader needs of the store: Get, and BatchGet when the
// store has it (store.GetMany uses it).
type getter interface {
	Get(ctx context.Context, pk string) (store.Item, error)
}

var _ circuit.ForceSource = (*controlReader)(nil)

func newControlReader(st getter, clk clock.Clock, logger *slog.Logger, refresh time.Duration, name string,
	onChange func(string, bool, time.Time)) *controlReader {
	return &controlReader{store: st, clock: clk, logger: logger, refresh: refresh, name: name, onChange: onChange, refuses: true}
}

// ForcedOpen implements [circuit.ForceSource]: one batch read of the
// dependency's override and the freeze item. The freeze part of the answer
// is kept; a failed read changes neither.
func (c *controlReader) ForcedOpen(ctx context.Context, dependency string) (breaker.Force, error) {
	start := c.clock.Now()
	key := breaker.OverrideKey(dependency)
	items, err := store.GetMany(ctx, c.store, []string{key, freeze.Key})
	if err != nil {
		return breaker.Force{}, err
	}
	c.observe(items[freeze.Key], start)
	return breaker.ForceOf(items[key], c.clock.Now())
}

// observe records one successful read of the freeze item (nil: none),
// made at at. An answer older than the reading held (two reads crossed)
// is dropped.
func (c *controlReader) observe(it store.Item, at time.Time) {
	r := freeze.ReadingOf(it, at)
	c.mu.Lock()
	if at.Before(c.reading.ReadAt) {
		c.mu.Unlock()
		return
	}
	c.reading = r
	c.mu.Unlock()
	c.report(c.clock.Now())
}

// report tells onChange (and the log) when the reading starts or stops
// refusing every chaos header at now.
func (c *controlReader) report(now time.Time) {
	c.mu.Lock()
	refuses := c.reading.RefusesAll(now)
	changed, first := refuses != c.refuses, !c.reported
	c.refuses, c.reported = refuses, true
	r := c.reading
	c.mu.Unlock()
	if !changed {
		return
	}
	if first && !refuses {
		// The first reading found nothing frozen: not news.
		if c.onChange != nil {
			c.onChange(c.name, false, now)
		}
		return
	}
	attrs := []slog.Attr{slog.String("instance", c.name), slog.Bool("frozen", refuses)}
	if r.Freeze != nil {
		attrs = append(attrs, slog.String("freeze", r.Freeze.Describe(now)))
	}
	if refuses {
		c.logger.LogAttrs(context.Background(), slog.LevelWarn, "chaos frozen: every chaos header is ignored", append(attrs, slog.String("event", "chaos_frozen"))...)
	} else {
		c.logger.LogAttrs(context.Background(), slog.LevelInfo, "chaos no longer frozen", append(attrs, slog.String("event", "chaos_unfrozen"))...)
	}
	if c.onChange != nil {
		c.onChange(c.name, refuses, now)
	}
}

// snapshot returns the freeze reading as held, without reading.
func (c *controlReader) snapshot() freeze.Reading {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reading
}

// fresh reports whether the reading is younger than the cache period at
// now: the chaos gate acts on it as it is; an older one is refreshed first
// ([Instance.freezeReading]).
func (c *controlReader) fresh(now time.Time) bool {
	r := c.snapshot()
	return !r.ReadAt.IsZero() && now.Sub(r.ReadAt) < c.refresh
}

// refusesAll is the chaos_frozen gauge's value at now, from what is held
// (no read).
func (c *controlReader) refusesAll(now time.Time) bool {
	return c.snapshot().RefusesAll(now)
}
