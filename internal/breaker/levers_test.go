package breaker_test

import (
	"context"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// levers is an Overrides with its audit log on the same store, for tests
// that set overrides up and look only at the result.
type levers struct {
	*breaker.Overrides
	log *audit.Log
}

func newLevers(s store.Store, clk clock.Clock) levers {
	return levers{Overrides: breaker.NewOverrides(s, clk), log: audit.NewLog(s, clk, "ctx")}
}

// Force forces one override, recorded in l's log.
func (l levers) Force(ctx context.Context, req breaker.ForceRequest) (breaker.ForceResult, error) {
	res, _, err := l.Overrides.WithLog(l.log).Force(ctx, req)
	return res, err
}

// Clear clears one override as "tester", recorded in l's log.
func (l levers) Clear(ctx context.Context, dependency string) (breaker.ClearResult, error) {
	res, _, err := l.Overrides.WithLog(l.log).Clear(ctx, dependency, "tester", "test")
	return res, err
}
