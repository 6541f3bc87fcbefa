package runner

import (
	"context"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/freeze"
)

// The fleet's freeze (docs/contracts/freeze.md) is every run's guard: a
// drill does not start while the fleet is frozen, and a running one stops
// at its next guard poll and rolls back every lever, its journal saying
// who froze the fleet and for which incident. A freeze that cannot be read
// is a guard that cannot be evaluated: the run does not start, and during
// the run it is lost past the drill's guard_grace.

// FreezeReader reads the fleet's freeze (nil: none is recorded).
type FreezeReader func(ctx context.Context) (*freeze.Freeze, error)

// GuardFreeze names the freeze among a run's guards.
const GuardFreeze = "the fleet's freeze"

// RoleFreeze is the freeze's role in a guard record.
const RoleFreeze = "freeze"

// unfrozen reads the freeze before anything is done, and refuses the run
// while the fleet is frozen (exit 7, naming the freeze) or when the freeze
// cannot be read. It reports whether the run may go on.
func (u *run) unfrozen(ctx context.Context) bool {
	if u.cfg.Freeze == nil {
		return true
	}
	f, err := u.cfg.Freeze(ctx)
	if ctx.Err() != nil {
		return true // interrupted: the preflight says so
	}
	now := u.rc.Now()
	if err != nil {
		fix := runtime.GuardFix(err)
		guard := &drill.GuardRecord{Phase: drill.GuardPreflight, Role: RoleFreeze, Condition: GuardFreeze, Cause: err.Error(), Fix: fix, At: now.UTC()}
		return u.refuse(fmt.Sprintf("refused before any lever was pulled: %s could not be read: %v: %s", GuardFreeze, err, fix), guard, runtime.GuardFailure(err))
	}
	if held := freeze.Held(f, now, "no drill starts while the fleet is frozen"); held != nil {
		return u.refuse("refused before any lever was pulled: "+held.Error(), nil, held)
	}
	return true
}

// freezeStop reads the freeze once during the run: a *[StopError] while
// the fleet is frozen; a *runtime.GuardLostError once it has been
// unreadable past the drill's guard_grace; nil otherwise (an unreadable
// freeze within the grace is a notice).
func (u *run) freezeStop(ctx context.Context) error {
	if u.cfg.Freeze == nil {
		return nil
	}
	f, err := u.cfg.Freeze(ctx)
	if ctx.Err() != nil {
		return nil
	}
	lost, recovered := u.pollGuard(nil, RoleFreeze, GuardFreeze, err, true)
	switch {
	case lost != nil:
		return lost
	case err != nil:
		u.jr.noticeStop(GuardFreeze, fmt.Sprintf("%s could not be read: %s; the run stops and rolls back if it stays so for %s", GuardFreeze, err, u.d.GuardGrace))
		return nil
	case recovered:
		u.jr.noticeStop(GuardFreeze, GuardFreeze+" can be read again")
	}
	if now := u.rc.Now(); f != nil && f.FrozenAt(now) {
		return &StopError{Condition: GuardFreeze, Detail: f.Describe(now) + ": every drill stops and rolls back while it holds"}
	}
	return nil
}
