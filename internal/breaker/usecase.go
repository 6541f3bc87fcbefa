package breaker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The override lever's use cases: what the CLI, the dashboard, the MCP
// server, drills and approvals ask of the lever service, built once here.

// ForceOpen is the change forcing deps open for reason, lasting as p says.
func ForceOpen(reason string, p ForceParams, deps ...string) lever.Change {
	return lever.Change{Action: ActionForceOpen, Targets: deps, Reason: reason, Params: p}
}

// Clear is the change clearing deps' overrides (a dependency without one
// is already clear).
func Clear(reason string, deps ...string) lever.Change {
	return lever.Change{Action: ActionClear, Targets: deps, Reason: reason}
}

// Proposed implements [lever.Proposer]: an agent's force or clear of
// dependencies, each a valid name the context knows (a.Known), named
// once; a force lasts "for" (default [DefaultFor]) and replaces an active
// override only with "overwrite".
func (s *Overrides) Proposed(action string, a lever.Args) (lever.Change, error) {
	if err := CheckDependencies(a.Targets, a.Known); err != nil {
		return lever.Change{}, err
	}
	switch action {
	case ActionForceOpen:
		p := ForceParams{For: DefaultFor, Overwrite: a.Bool("overwrite")}
		if v := a.String("for"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return lever.Change{}, fmt.Errorf("for %q is not a positive duration: give one like 30m or 2h", v)
			}
			p.For = d
		}
		c := ForceOpen(a.Reason, p, a.Targets...)
		c.Known = a.Known
		return c, nil
	case ActionClear:
		return Clear(a.Reason, a.Targets...), nil
	}
	return lever.Change{}, fmt.Errorf("%s is not proposed by an agent", action)
}

// ClearAll is `breaker clear --all`'s change: every override in the store,
// found with a consistent scan (an item written by hand without the index
// attribute, one whose pk is not a valid dependency name, included), each
// cleared conditional on the item the scan read, never read again: 10,000
// overrides are one scan, not a scan and 100 batch reads. The items under
// beside (what the lever service's caller decides the change on: the
// table's policy, for internal/approval's guard) are read beside the scan, in its
// first round trip, and handed in as the change's Seen (nil: absent, which
// the write then checks), so nothing reads them again.
func (s *Overrides) ClearAll(ctx context.Context, reason string, beside ...string) (lever.Change, error) {
	var all []Override
	extras, err := s.scanList(ctx, beside, func(o Override) bool { all = append(all, o); return true })
	if err != nil {
		return lever.Change{}, err
	}
	c := Clear(reason)
	// Every override may be thousands: in transactions of at most 50, each
	// whole and each reported (surfaces say so).
	c.Chunked = true
	c.Read = make(map[string]store.Item, len(all))
	for _, o := range all {
		c.Targets = append(c.Targets, o.Dependency)
		c.Read[o.Dependency] = o.Raw
	}
	if len(beside) > 0 {
		c.Seen = make(map[string]store.Item, len(beside))
		for _, k := range beside {
			c.Seen[k] = extras[k] // nil: absent
		}
	}
	return c, nil
}

// ForceResultOf is a force's result in an outcome.
func ForceResultOf(o lever.Outcome) ForceResult {
	r, _ := o.Result.(ForceResult)
	return r
}

// ClearResultOf is a clear's result in an outcome.
func ClearResultOf(o lever.Outcome) ClearResult {
	r, _ := o.Result.(ClearResult)
	return r
}

// Restore undoes the caller's own change of dep's override (a drill's
// rollback, drill recover) with its record, decided on cur (the override
// as the caller read it, nil when absent) and conditional on it: the item
// still the caller's write (p.Mine), or still absent. An override someone
// else wrote since, read or met at the write, is left alone. Nothing to
// undo (already as wanted) writes nothing.
func Restore(ctx context.Context, svc lever.Changer, dep, actor, reason string, cur *Override, p RestoreParams) (RestoreResult, lever.Outcome, error) {
	c := lever.Change{Action: ActionRestore, Targets: []string{dep}, Reason: reason, Actor: actor, Params: p, NoNotify: true,
		Read: map[string]store.Item{dep: nil}}
	if cur != nil {
		c.Read[dep] = cur.Raw
	}
	rep, err := lever.Do(ctx, svc, c, nil)
	if len(rep.Outcomes) == 0 {
		return RestoreResult{}, lever.Outcome{}, err
	}
	o := rep.Outcomes[0]
	if ce := (*ConflictError)(nil); errors.As(err, &ce) {
		// Someone wrote it between the read and the transaction.
		return RestoreResult{LeftAlone: &ce.Current}, lever.Outcome{}, nil
	}
	if err != nil {
		return RestoreResult{}, o, fmt.Errorf("restore override of %s: %w", dep, err)
	}
	r, _ := o.Result.(RestoreResult)
	return r, o, nil
}
