package breaker

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// OverridePrefix starts the pk of every breaker override item.
const OverridePrefix = "breaker#"

// OverrideStateForcedOpen is the only state an override item carries.
const OverrideStateForcedOpen = "forced_open"

// Attribute names of the override item (docs/contracts/breaker-override.md).
const (
	attrState     = "state"
	attrReason    = "reason"
	attrActor     = "actor"
	attrCreatedAt = "created_at"
	attrExpiresAt = "expires_at"
	attrVersion   = "version"
)

var dependencyRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ErrInvalidDependency reports a dependency name that cannot name a breaker.
var ErrInvalidDependency = errors.New("invalid dependency name")

// ErrInvalidOverride reports a stored item that is not a well-formed override.
var ErrInvalidOverride = errors.New("malformed override item")

// ValidateDependency checks a dependency name: lowercase letters, digits and
// inner hyphens, 1 to 63 characters (it becomes part of a DynamoDB key and a
// metric dimension).
func ValidateDependency(name string) error {
	if !dependencyRE.MatchString(name) {
		return fmt.Errorf("%w %q: use 1-63 lowercase letters, digits and inner hyphens, like openai or core-api", ErrInvalidDependency, name)
	}
	return nil
}

// OverrideKey returns the pk of dependency's override item.
func OverrideKey(dependency string) string { return OverridePrefix + dependency }

// Override is a fleet-wide forced_open override of one dependency's breaker.
type Override struct {
	Dependency string
	// State is always OverrideStateForcedOpen for items koshactl writes; a
	// different value is kept so readers can report it (and it is inactive).
	State     string
	Reason    string
	Actor     string
	CreatedAt time.Time
	// ExpiresAt is the zero time when the override does not expire.
	ExpiresAt time.Time
	// Version increases by one on every write; conditional writes compare it.
	Version int64
}

// ActiveAt applies the data plane's rule: an override is active iff its item
// exists, its state is forced_open and expires_at is absent or after now.
func (o Override) ActiveAt(now time.Time) bool {
	if o.State != OverrideStateForcedOpen {
		return false
	}
	return o.ExpiresAt.IsZero() || now.Before(o.ExpiresAt)
}

// Expires reports whether the override has an expiry.
func (o Override) Expires() bool { return !o.ExpiresAt.IsZero() }

// Item encodes the override as a store item following the contract.
func (o Override) Item() store.Item {
	it := store.Item{
		store.PK:      OverrideKey(o.Dependency),
		attrState:     o.State,
		attrReason:    o.Reason,
		attrActor:     o.Actor,
		attrCreatedAt: o.CreatedAt.UnixMilli(),
		attrVersion:   o.Version,
		// Additive: places the item in the overrides index (ListFor).
		store.IndexOverrides.Attr: OverrideIndexKey,
	}
	if o.Expires() {
		ms := o.ExpiresAt.UnixMilli()
		it[attrExpiresAt] = ms
		// DynamoDB TTL works in whole seconds; round up so GC never runs
		// before the override has expired.
		it[store.TTLAttr] = (ms + 999) / 1000
	}
	return it
}

// OverrideFromItem decodes a stored override item.
func OverrideFromItem(it store.Item) (Override, error) {
	pk := it.PK()
	dep, ok := strings.CutPrefix(pk, OverridePrefix)
	if !ok || dep == "" {
		return Override{}, fmt.Errorf("%w: pk %q does not start with %q", ErrInvalidOverride, pk, OverridePrefix)
	}
	o := Override{Dependency: dep, State: it.Str(attrState), Reason: it.Str(attrReason), Actor: it.Str(attrActor)}
	created, ok := it.Int(attrCreatedAt)
	if !ok {
		return Override{}, fmt.Errorf("%w: %s has no numeric created_at", ErrInvalidOverride, pk)
	}
	o.CreatedAt = time.UnixMilli(created).UTC()
	if exp, ok := it.Int(attrExpiresAt); ok {
		o.ExpiresAt = time.UnixMilli(exp).UTC()
	}
	o.Version, _ = it.Int(attrVersion)
	return o, nil
}

// OverrideStore is what [Overrides] needs of a store.
type OverrideStore interface {
	Get(ctx context.Context, pk string) (store.Item, error)
	Put(ctx context.Context, item store.Item, cond store.Condition) error
	Delete(ctx context.Context, pk string, cond store.Condition) error
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
}

// Overrides reads and changes breaker overrides on a store. Every change is a
// conditional write on the item's version, so two operators acting at once
// never overwrite each other silently.
type Overrides struct {
	store   OverrideStore
	clock   clock.Clock
	notices noticeSink
}

// NewOverrides returns an Overrides on s. A nil clk means the wall clock.
func NewOverrides(s OverrideStore, clk clock.Clock) *Overrides {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Overrides{store: s, clock: clk}
}

// Get returns dependency's override item, active or not, or an error wrapping
// store.ErrNotFound.
func (s *Overrides) Get(ctx context.Context, dependency string) (Override, error) {
	it, err := s.store.Get(ctx, OverrideKey(dependency))
	if err != nil {
		return Override{}, fmt.Errorf("read override %s: %w", dependency, err)
	}
	return OverrideFromItem(it)
}

// ForcedOpen reads dependency's override and applies the data plane's rule
// at the current time. It makes *Overrides the [ForceSource] a
// [ForceWatcher] caches: an absent item is an inactive Force, a store error is
// returned so the watcher keeps its last known value.
func (s *Overrides) ForcedOpen(ctx context.Context, dependency string) (Force, error) {
	o, err := s.Get(ctx, dependency)
	if errors.Is(err, store.ErrNotFound) {
		return Force{}, nil
	}
	if err != nil {
		return Force{}, err
	}
	return Force{Active: o.ActiveAt(s.clock.Now()), ExpiresAt: o.ExpiresAt, Reason: o.Reason}, nil
}

var _ ForceSource = (*Overrides)(nil)

// List returns every override item (active or expired), sorted by
// dependency: [Overrides.ListFor] with no known dependencies, so every key
// comes from the overrides index. Callers that know the context's
// dependencies pass them to ListFor, which reads those consistently.
func (s *Overrides) List(ctx context.Context) ([]Override, error) {
	return s.ListFor(ctx, nil)
}

// scanList lists overrides with a scan of the table: for stores without
// indexes and tables that lack the overrides index.
func (s *Overrides) scanList(ctx context.Context) ([]Override, error) {
	var out []Override
	for it, err := range s.store.Scan(ctx, store.ScanQuery{Prefix: OverridePrefix}) {
		if err != nil {
			return nil, fmt.Errorf("list overrides: %w", err)
		}
		o, err := OverrideFromItem(it)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dependency < out[j].Dependency })
	return out, nil
}

// ForceRequest asks for a forced_open override.
type ForceRequest struct {
	Dependency string
	Reason     string
	Actor      string
	// ExpiresAt is when the override lapses; zero means never (the caller
	// enforces --no-expiry rules). Ignored when For is set.
	ExpiresAt time.Time
	// For, when positive, sets the expiry to the write's own created_at + For,
	// so the two stamps are exactly For apart.
	For time.Duration
	// Overwrite replaces an active override set by someone else.
	Overwrite bool
	// SeenVersion, when set, is the version of the active override the
	// caller saw and agreed to replace (the dashboard's prompt): that one is
	// replaced without Overwrite, and a different active override (someone
	// changed it since) is a conflict with Raced set.
	SeenVersion *int64
	// DryRun computes the result without writing.
	DryRun bool
	// Read, when set, is the state a previous Force (a dry run) read; Force
	// writes conditionally on it instead of reading again. If the item changed
	// since, the write fails as a conflict, exactly as if it had been re-read.
	Read *ReadState
}

// ReadState is what Force read of an override before deciding.
type ReadState struct {
	// Current is the item read, nil when absent.
	Current *Override
}

// ForceResult says what a force did.
type ForceResult struct {
	// Before is the item that was replaced (active or expired), if any.
	Before *Override
	After  Override
	// Replaced is true when an active override was overwritten.
	Replaced bool
}

// ConflictError reports an override that someone else holds (or changed while
// we were acting).
type ConflictError struct {
	Current Override
	// Raced is true when the item changed between our read and our write.
	Raced bool
}

// ErrConflict matches a *ConflictError with errors.Is.
var ErrConflict = errors.New("override conflict")

func (e *ConflictError) Error() string {
	c := e.Current
	what := fmt.Sprintf("%s is already forced open by %s (reason: %q", c.Dependency, c.Actor, c.Reason)
	if c.Expires() {
		what += ", expires " + c.ExpiresAt.Format(time.RFC3339)
	}
	what += ")"
	if e.Raced {
		return what + "; it changed while koshactl was acting: review it, then re-run"
	}
	return what
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Force writes a forced_open override. It fails with *ConflictError when an
// active override exists and Overwrite is false, or when the item changed
// between the read and the conditional write.
func (s *Overrides) Force(ctx context.Context, req ForceRequest) (ForceResult, error) {
	if err := ValidateDependency(req.Dependency); err != nil {
		return ForceResult{}, err
	}
	now := s.clock.Now()
	var before *Override
	if req.Read != nil {
		before = req.Read.Current
	} else {
		cur, err := s.Get(ctx, req.Dependency)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return ForceResult{}, err
		default:
			before = &cur
		}
	}
	res := ForceResult{Before: before}
	if before != nil && before.ActiveAt(now) {
		switch {
		case req.SeenVersion != nil && before.Version != *req.SeenVersion:
			return res, &ConflictError{Current: *before, Raced: true}
		case req.SeenVersion != nil:
			// The override the caller saw: replacing it was agreed.
		case !req.Overwrite:
			return res, &ConflictError{Current: *before}
		}
		res.Replaced = true
	}
	after := Override{
		Dependency: req.Dependency,
		State:      OverrideStateForcedOpen,
		Reason:     req.Reason,
		Actor:      req.Actor,
		CreatedAt:  now.UTC().Truncate(time.Millisecond),
		ExpiresAt:  req.ExpiresAt.UTC().Truncate(time.Millisecond),
		Version:    1,
	}
	switch {
	case req.For > 0:
		after.ExpiresAt = after.CreatedAt.Add(req.For)
	case req.ExpiresAt.IsZero():
		after.ExpiresAt = time.Time{}
	}
	cond := store.IfAbsent()
	if before != nil {
		after.Version = before.Version + 1
		cond = store.IfEquals(attrVersion, before.Version)
	}
	res.After = after
	if req.DryRun {
		return res, nil
	}
	if err := s.store.Put(ctx, after.Item(), cond); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return res, s.raced(ctx, req.Dependency)
		}
		return res, fmt.Errorf("write override %s: %w", req.Dependency, err)
	}
	return res, nil
}

// raced builds the conflict error after a refused conditional write.
func (s *Overrides) raced(ctx context.Context, dependency string) error {
	cur, err := s.Get(ctx, dependency)
	if err != nil {
		return fmt.Errorf("override %s changed while koshactl was acting, and re-reading it failed: %w", dependency, err)
	}
	return &ConflictError{Current: cur, Raced: true}
}

// ClearResult says what a clear did.
type ClearResult struct {
	// Before is the item that was deleted; nil when there was nothing to clear.
	Before *Override
	// WasActive is true when the deleted override was still in force.
	WasActive bool
}

// Clear deletes dependency's override. Clearing an absent override succeeds
// with a nil Before (idempotent). The delete is conditional on the version
// read, so an override re-forced meanwhile by someone else is not removed
// unseen: that returns *ConflictError.
func (s *Overrides) Clear(ctx context.Context, dependency string, dryRun bool) (ClearResult, error) {
	cur, err := s.Get(ctx, dependency)
	if errors.Is(err, store.ErrNotFound) {
		return ClearResult{}, nil
	}
	if err != nil {
		return ClearResult{}, err
	}
	return s.clearFrom(ctx, dependency, cur, dryRun)
}

// clearFrom is Clear after the read: it deletes cur, conditional on its
// version.
func (s *Overrides) clearFrom(ctx context.Context, dependency string, cur Override, dryRun bool) (ClearResult, error) {
	res := ClearResult{Before: &cur, WasActive: cur.ActiveAt(s.clock.Now())}
	if dryRun {
		return res, nil
	}
	if err := s.store.Delete(ctx, OverrideKey(dependency), store.IfEquals(attrVersion, cur.Version)); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			// Gone already (someone else cleared it) is the outcome we wanted.
			if _, gerr := s.Get(ctx, dependency); errors.Is(gerr, store.ErrNotFound) {
				return ClearResult{}, nil
			}
			return res, s.raced(ctx, dependency)
		}
		return res, fmt.Errorf("delete override %s: %w", dependency, err)
	}
	return res, nil
}
