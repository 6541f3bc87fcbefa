package breaker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The lever operations: one per lever (force, clear, restore), used alike
// by the force-open and clear commands, the dashboard and drills. Each works
// in a fixed number of round trips whatever the number of dependencies: one
// consistent batch read of every current override (while the actor is
// resolved), then one transaction holding every override's conditional
// write and its audit record ([Overrides.commit]).

// ForceOutcome is what happened to one request of [Overrides.ForceAll].
type ForceOutcome struct {
	Result ForceResult
	// Record is the audit record written (zero on a dry run).
	Record audit.Record
	// Written is true when the override and its record were written.
	Written bool
	// Err is why the request failed: nothing of it was written, or
	// (store.ErrOutcomeUnknown) nobody can tell.
	Err error
}

// ForceAll asks for several forced_open overrides at once.
type ForceAll struct {
	Requests []ForceRequest
	// Actor, when set, names who acts (the STS identity on AWS contexts):
	// it runs concurrently with the batch read and its answer is every
	// request's Actor.
	Actor func(ctx context.Context) (string, error)
	// DryRun decides every request and writes nothing.
	DryRun bool
	// Confirm, when set, is called with the decided results after every
	// read and before the first write; an error from it aborts, nothing
	// written.
	Confirm func(plans []ForceResult) error
	// Known, when not nil, is the context's list of dependencies: a request
	// for one it does not list is refused with an *[UnknownDependencyError]
	// before anything is read. Nil applies no such rule (--allow-unknown,
	// the dashboard's rows, which name stored overrides).
	Known []string
	// Attach, when set, is how the table's policy let the change through
	// and the writes that go in its transaction ([Attach]).
	Attach *Attach
	// Gate, when set, decides the change from items read in the same batch
	// read as the overrides (the table's policy): see [Gate].
	Gate *Gate
	// NoNotify keeps the change from being announced (--no-notify).
	NoNotify bool
	// Note is said with the change's announcement (a break-glass review).
	Note Note
}

// ForceAll checks every request's dependency ([CheckDependencies], against
// op.Known), reason ([CheckForceReason]) and lifetime (the service's
// duration policy; no expiry only with NoExpiry), reads every dependency's override in one strongly consistent
// batch read and decides each request once ([CheckForce]'s rules). A
// conflict on any of them returns its *ConflictError and writes nothing.
// Then, unless DryRun, it writes every decided override, conditional on the
// item read, with its audit record, in one transaction ([Overrides.commit]:
// all or nothing, by chunks past DynamoDB's limit), and returns one outcome
// per request, in request order, and announces what it wrote. The error is
// the first failed request's (in request order); outcomes say which were
// written.
func (s *Overrides) ForceAll(ctx context.Context, op ForceAll) ([]ForceOutcome, error) {
	log, err := s.changeLog()
	if err != nil && !op.DryRun {
		return nil, err
	}
	deps := make([]string, len(op.Requests))
	for i, r := range op.Requests {
		deps[i] = r.Dependency
	}
	if err := CheckDependencies(deps, op.Known); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	for _, r := range op.Requests {
		if err := CheckForceReason(r.Reason); err != nil {
			return nil, err
		}
		if err := s.checkLifetime(r, now); err != nil {
			return nil, err
		}
	}
	// A request that carries what the caller read is decided on that
	// (and written conditional on it): it is not read again.
	toRead := make([]string, 0, len(deps))
	for _, r := range op.Requests {
		if r.Read == nil {
			toRead = append(toRead, r.Dependency)
		}
	}
	current, extras, actor, err := s.readWithActor(ctx, toRead, op.Actor, op.Gate.keys())
	if err != nil {
		return nil, err
	}
	for _, r := range op.Requests {
		if r.Read != nil {
			current[r.Dependency] = r.Read.Current
		}
	}
	plans := make([]forcePlan, len(op.Requests))
	results := make([]ForceResult, len(op.Requests))
	for i, r := range op.Requests {
		if op.Actor != nil {
			r.Actor = actor
		}
		p, err := s.planForce(r, current[r.Dependency])
		if err != nil {
			return nil, err
		}
		plans[i], results[i] = p, p.result
	}
	if op.Gate != nil {
		befores := make(map[string]*Override, len(plans))
		for _, p := range plans {
			befores[p.req.Dependency] = p.result.Before
		}
		if op.Attach, err = op.Gate.Decide(extras, befores); err != nil {
			return nil, err
		}
	}
	if err := checkQuiet(op.NoNotify, op.Attach); err != nil {
		return nil, err
	}
	outcomes := make([]ForceOutcome, len(plans))
	if op.DryRun {
		for i, p := range results {
			outcomes[i] = ForceOutcome{Result: p}
		}
		return outcomes, nil
	}
	if op.Confirm != nil {
		if err := op.Confirm(results); err != nil {
			return nil, err
		}
	}
	writes := make([]leverWrite, len(plans))
	for i, p := range plans {
		writes[i] = p.write(&outcomes[i].Result)
	}
	for i, c := range s.commit(ctx, log, writes, op.Attach) {
		o := &outcomes[i]
		o.Record, o.Err, o.Written = c.record, c.err, c.err == nil
		o.Result.Confirmed = c.confirmed
		if c.err != nil {
			o.Err = fmt.Errorf("force-open %s: %w", plans[i].req.Dependency, c.err)
		}
	}
	s.announceWritten(ctx, op.NoNotify, Announcement{Action: ActionForceOpen, Forces: outcomes, Note: op.Attach.note(op.Note)})
	return outcomes, firstError(outcomes, func(o ForceOutcome) error { return o.Err })
}

// Gate lets a caller decide a lever change from items read with its
// overrides, in the same batch read (the table's policy: one round trip, not
// two), after every override is read and checked and before anything is
// written or confirmed.
type Gate struct {
	// Keys are read with the overrides.
	Keys []string
	// Decide gets those of Keys that exist and each dependency's override
	// as read (nil when absent); the Attach it returns goes with the
	// change (replacing the operation's), its error stops it, nothing
	// written.
	Decide func(items map[string]store.Item, befores map[string]*Override) (*Attach, error)
}

func (g *Gate) keys() []string {
	if g == nil {
		return nil
	}
	return g.Keys
}

// ErrNamedTwice reports a dependency named twice in one operation.
var ErrNamedTwice = errors.New("named twice")

// CheckDependencies is the one check of the dependencies an operation
// names: each by [ValidateDependency], none twice (an error wrapping
// [ErrNamedTwice]), and, when known is not nil, each one the context lists
// ([CheckKnownDependency]'s *[UnknownDependencyError]). Names are checked in
// order; the first problem is returned.
func CheckDependencies(names, known []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if err := ValidateDependency(n); err != nil {
			return err
		}
		if seen[n] {
			return fmt.Errorf("dependency %q is %w", n, ErrNamedTwice)
		}
		seen[n] = true
		if known == nil {
			continue
		}
		if !slices.Contains(known, n) {
			return &UnknownDependencyError{Name: n, Known: known, Suggestion: ClosestDependency(n, known)}
		}
	}
	return nil
}

// ClearOutcome is what happened to one dependency of [Overrides.ClearAll].
type ClearOutcome struct {
	Dependency string
	Result     ClearResult
	Record     audit.Record
	// Written is true when the override was deleted with its record; false
	// for one that was already clear.
	Written bool
	Err     error
}

// ClearAll asks for several overrides to be cleared at once.
type ClearAll struct {
	Dependencies []string
	// Keys names override items by pk (breaker#<anything>), for an item
	// whose pk is not a valid dependency name (`breaker#Bad Name`, written
	// by hand): cleared like any other, conditional and audited. Their
	// outcomes follow those of Dependencies, with the pk's rest as their
	// Dependency.
	Keys   []string
	Reason string
	// Actor, when set, names who acts; it runs concurrently with the batch
	// read. Nil is fine on a dry run.
	Actor   func(ctx context.Context) (string, error)
	DryRun  bool
	Confirm func(plans []ClearResult) error
	// Read, when set, holds the overrides the caller read and checked, by
	// dependency (nil for an absent one): ClearAll reads nothing itself and
	// deletes each conditional on the item the caller saw, so one written
	// since (someone else's) is a *ConflictError with Raced set, never
	// deleted unseen. A dependency missing from Read is read as usual.
	Read map[string]*Override
	// Known, when not nil, is the context's list of dependencies (the
	// known-dependency rule of [CheckKnownDependency], as force-open applies
	// it): a named dependency it does not list and that has no override in
	// the store is refused with an *[UnknownDependencyError] before anything
	// is confirmed or written, so a typo like open-ai never reports
	// "nothing to clear" while openai stays forced. An unknown name whose
	// override is stored is cleared: the operator names an item that
	// exists (breaker list shows it), so it is no typo. Nil applies no
	// such rule (--allow-unknown, --all, a drill's own levers).
	Known []string
	// Attach, when set, is how the table's policy let the change through
	// and the writes that go in its transaction ([Attach]).
	Attach *Attach
	// Gate, when set, decides the change from items read in the same batch
	// read as the overrides (the table's policy): see [Gate].
	Gate *Gate
	// NoNotify keeps the change from being announced (--no-notify).
	NoNotify bool
	// Note is said with the change's announcement (a break-glass review).
	Note Note
}

// ClearAll reads every dependency's override in one consistent batch read,
// then (unless DryRun) deletes the present ones, each conditional on the
// item read (an override re-forced meanwhile is a *ConflictError with Raced
// set, never deleted unseen), with its audit record, in one transaction
// ([Overrides.commit]), and announces what it wrote. Outcomes come in the
// order of op.Dependencies.
func (s *Overrides) ClearAll(ctx context.Context, op ClearAll) ([]ClearOutcome, error) {
	log, err := s.changeLog()
	if err != nil && !op.DryRun {
		return nil, err
	}
	if err := audit.ValidateReason(op.Reason); err != nil {
		return nil, err
	}
	for _, dep := range op.Dependencies {
		if err := ValidateDependency(dep); err != nil {
			return nil, err
		}
	}
	if len(op.Keys) > 0 {
		deps := slices.Clone(op.Dependencies)
		for _, k := range op.Keys {
			dep, err := DependencyOfKey(k)
			if err != nil {
				return nil, err
			}
			deps = append(deps, dep)
		}
		op.Dependencies = deps
	}
	actorFn := op.Actor
	if op.DryRun {
		actorFn = nil
	}
	var toRead []string
	for _, dep := range op.Dependencies {
		if _, seen := op.Read[dep]; !seen {
			toRead = append(toRead, dep)
		}
	}
	current, extras, actor, err := s.readWithActor(ctx, toRead, actorFn, op.Gate.keys())
	if err != nil {
		return nil, err
	}
	for dep, cur := range op.Read {
		current[dep] = cur
	}
	if op.Known != nil {
		for _, dep := range op.Dependencies {
			if current[dep] != nil {
				continue
			}
			if err := CheckKnownDependency(dep, op.Known); err != nil {
				return nil, err
			}
		}
	}
	outcomes := make([]ClearOutcome, len(op.Dependencies))
	plans := make([]ClearResult, len(op.Dependencies))
	for i, dep := range op.Dependencies {
		if cur := current[dep]; cur != nil {
			plans[i] = ClearResult{Before: cur, WasActive: cur.ActiveAt(s.clock.Now())}
		}
		outcomes[i] = ClearOutcome{Dependency: dep, Result: plans[i]}
	}
	if op.Gate != nil {
		befores := make(map[string]*Override, len(plans))
		for i, dep := range op.Dependencies {
			befores[dep] = plans[i].Before
		}
		if op.Attach, err = op.Gate.Decide(extras, befores); err != nil {
			return nil, err
		}
	}
	if err := checkQuiet(op.NoNotify, op.Attach); err != nil {
		return nil, err
	}
	if op.DryRun {
		return outcomes, nil
	}
	if op.Confirm != nil {
		if err := op.Confirm(plans); err != nil {
			return nil, err
		}
	}
	var writes []leverWrite
	var at []int
	for i, dep := range op.Dependencies {
		before := plans[i].Before
		if before == nil {
			continue // nothing to clear, nothing to record
		}
		at = append(at, i)
		writes = append(writes, clearWrite(dep, before, actor, op.Reason))
	}
	for j, c := range s.commit(ctx, log, writes, op.Attach) {
		o := &outcomes[at[j]]
		o.Record, o.Written = c.record, c.err == nil
		o.Result.Confirmed = c.confirmed
		if c.err != nil {
			o.Err = fmt.Errorf("clear %s: %w", o.Dependency, c.err)
		}
	}
	s.announceWritten(ctx, op.NoNotify, Announcement{Action: ActionClear, Reason: op.Reason, Clears: outcomes, Note: op.Attach.note(op.Note)})
	return outcomes, firstError(outcomes, func(o ClearOutcome) error { return o.Err })
}

// write is the plan's conditional put and audit entry, stamped when the
// change is built; res receives the result as written.
func (p forcePlan) write(res *ForceResult) leverWrite {
	return func(token string, now time.Time) (store.Op, audit.Entry) {
		*res = p.result
		// Activity only lapses with time: a plan's replacement may have
		// become a plain force, never the reverse.
		res.Replaced = res.Replaced && res.Before.ActiveAt(now)
		stampForce(&res.After, p.req, now)
		res.After.WriteID = token
		cond := store.IfAbsent()
		if res.Before != nil {
			cond = res.Before.condition()
		}
		return store.PutOp(res.After.Item(), cond), audit.Entry{Actor: res.After.Actor, Action: ActionForceOpen,
			Subject: OverrideKey(res.After.Dependency), Reason: res.After.Reason,
			Before: AuditState(res.Before), After: AuditState(&res.After)}
	}
}

// clearWrite deletes dep's override, conditional on before (the item read),
// with its audit record.
func clearWrite(dep string, before *Override, actor, reason string) leverWrite {
	return func(string, time.Time) (store.Op, audit.Entry) {
		return store.DeleteOp(OverrideKey(dep), before.condition()), audit.Entry{Actor: actor, Action: ActionClear,
			Subject: OverrideKey(dep), Reason: reason, Before: AuditState(before)}
	}
}

// readWithActor reads deps' overrides in one batch while actor (when set)
// resolves, and returns both.
func (s *Overrides) readWithActor(ctx context.Context, deps []string, actor func(context.Context) (string, error), extra []string) (map[string]*Override, map[string]store.Item, string, error) {
	var (
		name     string
		actorErr error
		wg       sync.WaitGroup
	)
	if actor != nil {
		wg.Go(func() { name, actorErr = actor(ctx) })
	}
	current, extras, err := s.readMany(ctx, deps, extra)
	wg.Wait()
	if actorErr != nil {
		return nil, nil, "", actorErr
	}
	return current, extras, name, err
}

// readMany reads deps' current overrides (nil for absent ones) in one
// consistent batch read.
func (s *Overrides) readMany(ctx context.Context, deps, extra []string) (map[string]*Override, map[string]store.Item, error) {
	if len(deps)+len(extra) == 0 {
		return map[string]*Override{}, map[string]store.Item{}, nil
	}
	keys := make([]string, 0, len(deps)+len(extra))
	for _, d := range deps {
		keys = append(keys, OverrideKey(d))
	}
	keys = append(keys, extra...)
	var items map[string]store.Item
	var err error
	if len(deps) == 0 && len(extra) == 1 {
		// One key (the policy alone, the overrides read already): a
		// GetItem, the cheapest read of one item.
		items = map[string]store.Item{}
		it, gerr := s.store.Get(ctx, keys[0])
		switch {
		case errors.Is(gerr, store.ErrNotFound):
		case gerr != nil:
			err = gerr
		default:
			items[keys[0]] = it
		}
	} else {
		items, err = store.GetMany(ctx, s.store, keys)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read overrides: %w", err)
	}
	extras := make(map[string]store.Item, len(extra))
	for _, k := range extra {
		if it, ok := items[k]; ok {
			extras[k] = it
		}
	}
	out := make(map[string]*Override, len(deps))
	for _, d := range deps {
		it, ok := items[OverrideKey(d)]
		if !ok {
			out[d] = nil
			continue
		}
		o, err := OverrideFromItem(it)
		if err != nil {
			return nil, nil, err
		}
		out[d] = &o
	}
	return out, extras, nil
}

// ErrInvalidKey reports a --key that does not name an override item.
var ErrInvalidKey = errors.New("not an override key")

// DependencyOfKey returns what follows "breaker#" in an override item's pk,
// valid dependency name or not; an error wrapping [ErrInvalidKey] when pk
// does not name an override item.
func DependencyOfKey(pk string) (string, error) {
	dep, ok := strings.CutPrefix(pk, OverridePrefix)
	if !ok || dep == "" {
		return "", fmt.Errorf("%w: %q: an override's key is %s<dependency>, as breaker list names it", ErrInvalidKey, pk, OverridePrefix)
	}
	return dep, nil
}

func firstError[T any](outcomes []T, errOf func(T) error) error {
	for _, o := range outcomes {
		if err := errOf(o); err != nil {
			return err
		}
	}
	return nil
}
