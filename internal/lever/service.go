package lever

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Store is what the service needs of the table.
type Store interface {
	store.Transactor
}

// Service moves levers of every registered kind. It is built once per
// context (by the command factory, the dashboard, a drill run) with the
// audit log its records go to ([Service.WithLog]) and who acts
// ([Service.WithActor]) bound in.
type Service struct {
	store Store
	clock clock.Clock
	kinds *Registry
	log   audit.Appender
	actor func(ctx context.Context) (string, error)
	// impact tells a forcing change's impact ([Service.WithImpact]).
	impact Assessor
}

// NewService returns the service of kinds on s; it changes nothing until
// an audit log is bound. A nil clk is the wall clock.
func NewService(s Store, clk clock.Clock, kinds *Registry) *Service {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Service{store: s, clock: clk, kinds: kinds}
}

// WithLog returns the service recording every change in log (a drill run's
// records carry its run id: the run binds its own).
func (s *Service) WithLog(log audit.Appender) *Service {
	c := *s
	c.log = log
	return &c
}

// WithActor returns the service asking actor who acts, while it reads, for
// a change that does not name its actor.
func (s *Service) WithActor(actor func(ctx context.Context) (string, error)) *Service {
	c := *s
	c.actor = actor
	return &c
}

// Kinds is the service's registry.
func (s *Service) Kinds() *Registry { return s.kinds }

// Planned is a change read and decided, not yet written: what a dry run
// reports, what a caller confirms, and what the table's policy is asked
// about.
type Planned struct {
	Change Change
	Kind   Kind
	Action Action
	// Plans are the targets' plans, in the change's order.
	Plans []Plan
	// Extra are the items of the extra keys read with the targets
	// (absent ones left out).
	Extra map[string]store.Item
	// Pending is the change request the change became (internal/approval's
	// guard): nothing is committed. Event announces it.
	Pending *Pending
	Event   *notify.Event
	// Requests and RequestEvents are the requests a change asked in
	// chunks became, one per chunk ([Report.Requests]).
	Requests      []Pending
	RequestEvents []*notify.Event
	// Impact is what the change does to the platform's tools (nil: its
	// kind forces nothing, or the service tells no impact).
	Impact Impact
	attach *Attach
	// at is when the targets were decided.
	at time.Time
	// extra are the extra keys the caller asked for; absent those of them
	// taken as absent without a read (a floor plan's, or seen absent),
	// which the commit checks are still absent; floor is true when the
	// targets were planned absent, unread (floor.go).
	extra, absent []string
	floor         bool
}

// Writes counts the targets the change writes.
func (p *Planned) Writes() int {
	n := 0
	for _, pl := range p.Plans {
		if !pl.Noop {
			n++
		}
	}
	return n
}

// Report is the planned change as a report: what it would do (a dry run).
func (p *Planned) Report() Report {
	r := Report{Change: p.Change, Outcomes: make([]Outcome, len(p.Plans))}
	for i, pl := range p.Plans {
		r.Outcomes[i] = Outcome{Target: pl.Target, Result: pl.Result, Noop: pl.Noop}
	}
	if p.attach != nil {
		r.Review = p.attach.Review
	}
	r.Pending, r.Event, r.Requests, r.RequestEvents, r.Impact = p.Pending, p.Event, p.Requests, p.RequestEvents, p.Impact
	return r
}

// Attach sets what the change carries under the table's policy. With
// attached writes every target is written (decided again with
// [Change.Always]), in one transaction.
func (p *Planned) Attach(at *Attach) error {
	p.attach = at
	if at == nil || at.Ops == nil || p.Change.Always {
		return nil
	}
	p.Change.Always = true
	for i, pl := range p.Plans {
		np, err := p.Kind.Plan(p.Change, pl.Target, pl.Item, p.at)
		if err != nil {
			return err
		}
		p.Plans[i] = np
	}
	return nil
}

// Attached is what the change carries under the table's policy (nil:
// nothing).
func (p *Planned) Attached() *Attach { return p.attach }

// Plan checks c, reads every target's item (and extra, for the caller) in
// one strongly consistent batch read while the actor resolves, and decides
// each target by its kind's rule. It writes nothing.
//
// A change at the floor reads nothing: when it is committed at once
// ([Change.AtOnce]) and every target's change from an absent item is a
// write conditional on its absence (a force with nothing in force), the
// targets and the extra keys are planned absent, unread, and the one
// transaction that writes them checks it (floor.go): nothing is written
// unless they are. A change shown before its commit (a prompt), a dry run,
// a break-glass, a change of items the caller read or of more than
// [MaxAttached] targets is read first.
func (s *Service) Plan(ctx context.Context, c Change, extra ...string) (*Planned, error) {
	spec, action, ok := s.kinds.Action(c.Action)
	if !ok {
		return nil, fmt.Errorf("%w for action %q: this koshactl cannot change it (upgrade koshactl)", ErrUnknownKind, c.Action)
	}
	kind, err := s.kinds.Kind(spec.Name)
	if err != nil {
		return nil, err
	}
	if s.log == nil && !c.DryRun {
		return nil, ErrNoAuditLog
	}
	if err := CheckTargets(c.Targets, spec.Noun, nil); err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	if err := kind.Check(c); err != nil {
		return nil, &RefusedError{Err: err}
	}
	var (
		actor    string
		actorErr error
		wg       sync.WaitGroup
	)
	resolve := c.Actor == "" && s.actor != nil && (!c.DryRun || action.DryRunActor)
	// The impact is told while the targets are read (or, at the floor,
	// while who acts resolves), and waited for only by a plan that stands:
	// a refusal does not wait on a rate source.
	impact := s.assess(ctx, kind, c, s.clock.Now())
	if floorable(c) {
		// Nothing to read beside: who acts is the write's first need.
		if resolve {
			actor, actorErr = s.actor(ctx)
			resolve = false
		}
		if actorErr == nil {
			fc := c
			if fc.Actor == "" {
				fc.Actor = actor
			}
			if p := s.planAbsent(ctx, fc, kind, action, extra); p != nil {
				p.Impact = impact()
				return p, nil
			}
		}
	}
	var keys []string
	for _, t := range c.Targets {
		_, read := c.Read[t]
		if _, known := c.Seen[spec.Key(t)]; !read && !known {
			keys = append(keys, spec.Key(t))
		}
	}
	var unread []string
	for _, k := range extra {
		if _, known := c.Seen[k]; !known {
			unread = append(unread, k)
		}
	}
	if resolve {
		wg.Go(func() { actor, actorErr = s.actor(ctx) })
	}
	items, err := s.read(ctx, keys, unread)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", plural(spec.Item), err)
	}
	for k, it := range c.Seen {
		if it != nil {
			items[k] = it
		}
	}
	if c.Actor == "" {
		c.Actor = actor
	}
	p := &Planned{Change: c, Kind: kind, Action: action, Plans: make([]Plan, len(c.Targets)), Extra: map[string]store.Item{}, at: s.clock.Now(), extra: extra}
	for _, k := range extra {
		if it, ok := items[k]; ok {
			p.Extra[k] = it
		} else if _, known := c.Seen[k]; known {
			p.absent = append(p.absent, k) // seen absent, not read: the write checks it
		}
	}
	for i, t := range c.Targets {
		it, read := c.Read[t]
		if !read {
			it = items[spec.Key(t)]
		}
		if p.Plans[i], err = kind.Plan(c, t, it, p.at); err != nil {
			return nil, err
		}
	}
	if err := kind.Admit(ctx, c, p.Plans); err != nil {
		return nil, err
	}
	if n := p.Writes(); n > ChunkLevers && !c.Chunked {
		return nil, &TooLargeError{Levers: n, Max: ChunkLevers, Item: plural(spec.Item)}
	}
	// Only a write needs to know who acts (a failing STS does not fail a
	// no-op), and a dry run that shows who would.
	if actorErr != nil && (c.DryRun || p.Writes() > 0) {
		return nil, actorErr
	}
	p.Impact = impact()
	return p, nil
}

// read reads keys and extra in one batch read; the one extra key alone (a
// policy item, the targets read by the caller) is one GetItem, the
// cheapest read of one item; nothing to read, no read.
func (s *Service) read(ctx context.Context, keys, extra []string) (map[string]store.Item, error) {
	switch {
	case len(keys)+len(extra) == 0:
		return map[string]store.Item{}, nil
	case len(keys) == 0:
		return store.GetFew(ctx, s.store, extra)
	}
	return store.GetMany(ctx, s.store, append(slices.Clone(keys), extra...))
}

// Commit writes a planned change: every target to write, conditional on
// its item as read and with its audit record, in one transaction per
// chunk of levers (at most four in flight; one with attached writes),
// each settled by [store.Apply]. A target refused by its own condition is
// read and decided again, as a new change, as often as its action allows;
// then it is refused with its kind's words. A dry run writes nothing.
// More levers than one transaction holds, not asked in chunks
// ([Change.Chunked]), are refused before anything is written
// ([*TooLargeError]). The error is the first failed target's (in order);
// the report says which were written, and in which chunk.
func (s *Service) Commit(ctx context.Context, p *Planned) (Report, error) {
	reps, err := s.CommitAll(ctx, p)
	if err := refusedWhole(reps[0]); err != nil {
		return Report{Change: p.Change}, err // as a read's plan refuses it
	}
	return reps[0], err
}

// CommitAll writes several planned changes as one: their targets' writes
// share the transactions (a levers file's forces and clears, all or none
// while they fit one). Only the first may carry attached writes. One report
// per change, in order; the error is the first failed target's.
func (s *Service) CommitAll(ctx context.Context, ps ...*Planned) ([]Report, error) {
	reps := make([]Report, len(ps))
	var todo []ref
	for n, p := range ps {
		reps[n] = p.Report()
		if p.Change.DryRun {
			continue
		}
		for i, pl := range p.Plans {
			if !pl.Noop {
				todo = append(todo, ref{p: p, i: i, out: &reps[n].Outcomes[i]})
			}
		}
	}
	if len(todo) > 0 {
		if err := fits(ps, todo); err != nil {
			return reps, err
		}
		s.commit(ctx, todo, ps[0].attach)
	}
	var first error
	for n, p := range ps {
		reps[n].Event = p.event(reps[n].Outcomes)
		if err := reps[n].Err(); first == nil {
			first = err
		}
	}
	return reps, first
}

// fits refuses, before anything is written, the writes todo of ps that
// cannot be one transaction ([chunkSize]) unless every change was asked
// in chunks; a change with attached writes is one transaction, never
// chunked.
func fits(ps []*Planned, todo []ref) error {
	n, item := len(todo), plural(ps[0].Kind.Spec().Item)
	if at := ps[0].attach; at != nil && at.Ops != nil && n > MaxAttached {
		return &TooLargeError{Levers: n, Max: MaxAttached, Item: item, Attached: true}
	}
	size := chunkSize(todo)
	if n <= size {
		return nil
	}
	for _, p := range ps {
		if !p.Change.Chunked {
			return &TooLargeError{Levers: n, Max: size, Item: item}
		}
	}
	return nil
}

// chunkSize is how many of todo's levers one transaction carries, with
// their records: [ChunkLevers], less room for the checks that the extra
// keys taken as absent still are, which every transaction carries. It is
// the one rule [fits] and [Service.commit] share, so a change is refused
// or numbered by the chunks it is written in.
func chunkSize(todo []ref) int { return ChunkLevers - (len(checks(todo))+1)/2 }

// commit writes todo in chunks of [chunkSize], at most [chunkWorkers] at
// once; a chunk not started when ctx ends is not sent. When there are
// several, each lever's outcome names its chunk, counted from 1.
func (s *Service) commit(ctx context.Context, todo []ref, at *Attach) {
	sem := make(chan struct{}, chunkWorkers)
	var wg sync.WaitGroup
	size := chunkSize(todo)
	if len(todo) > size {
		for i, r := range todo {
			r.out.Chunk = i/size + 1
		}
	}
	for start := 0; start < len(todo); start += size {
		chunk := todo[start:min(start+size, len(todo))]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			for _, r := range todo[start:] {
				r.out.Err = s.failure(r, len(chunk), fmt.Errorf("%w: interrupted before it was sent: %w: %w", ErrNotWritten, store.ErrNotSent, err))
			}
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			s.commitChunk(ctx, chunk, at)
		})
	}
	wg.Wait()
}

// Change plans c and commits it, with nothing asked in between.
func (s *Service) Change(ctx context.Context, c Change) (Report, error) { return Do(ctx, s, c, nil) }

// Changer is what moves levers: the [Service], or the service under the
// table's policy (internal/approval's guard), alike.
type Changer interface {
	Plan(ctx context.Context, c Change, extra ...string) (*Planned, error)
	Commit(ctx context.Context, p *Planned) (Report, error)
}

var _ Changer = (*Service)(nil)

// Do is every lever use case's run: plan c, let confirm see the plan (a
// protected context's prompt; nil: nothing asked), then commit it. A dry
// run is planned only; a change the table's policy turned into a request
// returns its report (Pending) and a *[PendingError]; a refusal before the
// commit, a report of nothing and its error.
func Do(ctx context.Context, s Changer, c Change, confirm func(*Planned) error) (Report, error) {
	c.AtOnce = confirm == nil
	p, err := s.Plan(ctx, c)
	switch {
	case p == nil:
		return Report{Change: c}, err
	case err != nil || c.DryRun:
		return p.Report(), err
	}
	if confirm != nil {
		if err := confirm(p); err != nil {
			return Report{Change: c}, err
		}
	}
	return s.Commit(ctx, p)
}

// event is the announcement of what outs wrote (nil when nothing, or
// quiet).
func (p *Planned) event(outs []Outcome) *notify.Event {
	c := p.Change
	var levers []notify.Lever
	actor := ""
	for _, o := range outs {
		if o.Written {
			levers = append(levers, p.Kind.Notice(c, o))
			if actor == "" {
				actor = o.Record.Actor
			}
		}
	}
	if c.NoNotify || len(levers) == 0 {
		return nil
	}
	note := c.Note
	if at := p.attach; at != nil && at.Note != (Note{}) {
		note = at.Note
	}
	ev := &notify.Event{Action: c.Action, Actor: actor, Reason: strings.TrimSpace(c.Reason), Levers: levers, Outcome: note.Outcome, Detail: note.Detail}
	if p.Impact != nil {
		ev.Impact = p.Impact.Lines()
	}
	return ev
}

func plural(noun string) string {
	if strings.HasSuffix(noun, "y") {
		return strings.TrimSuffix(noun, "y") + "ies"
	}
	return noun + "s"
}
