package breaker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
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
	attrWriteID   = store.WriteIDAttr
	// attrApproval is how the table's change policy let the write through
	// (the audit record's approval document); absent when the table had no
	// policy or the writer did not ask it.
	attrApproval = "approval"
	// attrManagedBy names the levers file and window an override was
	// written for (koshactl apply); absent on every other override. The
	// data plane ignores it.
	attrManagedBy = "managed_by"
)

// Attribute names other packages ask [Override.HasProblem] about.
const (
	AttrState     = attrState
	AttrExpiresAt = attrExpiresAt
	AttrVersion   = attrVersion
)

// ErrInvalidDependency reports a dependency name that cannot name a breaker.
var ErrInvalidDependency = exitcode.New(exitcode.Usage, "invalid dependency name")

// ErrInvalidOverride reports a stored item that is not a well-formed override.
var ErrInvalidOverride = errors.New("malformed override item")

// ValidateDependency checks a dependency name: lowercase letters, digits and
// inner hyphens, 1 to 63 characters (it becomes part of a DynamoDB key and a
// metric dimension).
func ValidateDependency(name string) error {
	if !validDependency(name) {
		return fmt.Errorf("%w %q: use 1-63 lowercase letters, digits and inner hyphens, like openai or core-api", ErrInvalidDependency, name)
	}
	return nil
}

// validDependency is the rule of ValidateDependency, written out rather than
// as ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$: compiling its 61 counted
// repetitions took longer than the rest of force-open's rules
// (TestDependencyRuleIsTheExpression checks that the two agree).
func validDependency(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
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
	// ExpiresAt is the zero time when the override does not expire, or when
	// its stored expires_at is malformed (see [Override.ActiveAt]).
	ExpiresAt time.Time
	// Version increases by one on every write; conditional writes compare the
	// stored attribute (Raw), not this parsed copy.
	Version int64
	// WriteID is the token of the write that stored the item (the write_id
	// attribute, unique per write; "" when the item has none, as items
	// written by hand or by older koshactl). When a write's answer is lost,
	// a re-read finding this token says the write landed.
	WriteID string
	// Raw is the item exactly as read from the store (nil for an override
	// built in memory). A write that replaces or deletes the item is
	// conditional on Raw's version attribute as stored, and audit records
	// keep Raw as the before-image, so nothing is judged by a parsed,
	// truncated copy.
	Raw store.Item
	// Approval is how the table's change policy let the write that stored
	// the item through (its approval attribute, the same document as its
	// audit record's); nil when the item has none or it cannot be read: a
	// write made without asking the policy (policy.UnapprovedAt).
	Approval *audit.Approval
	// ManagedBy is the marker of the levers file and window the override
	// was written for by `koshactl apply` (the managed_by attribute); empty
	// on every other override, which apply never clears. It says which
	// overrides a file manages; it grants nothing (any writer of breaker#
	// items could set it).
	ManagedBy string
	// Problems lists the attributes of Raw that do not follow
	// docs/contracts/breaker-override.md, one entry each; empty for a
	// well-formed item. Only [OverrideFromItem] decides what is malformed.
	Problems []store.Problem
}

// Malformed reports whether the stored item does not follow the contract.
func (o Override) Malformed() bool { return len(o.Problems) > 0 }

// HasProblem reports whether attribute attr of the stored item is malformed.
func (o Override) HasProblem(attr string) bool { return store.HasProblem(o.Problems, attr) }

// MalformedSummary says in one line what of the stored item does not follow
// the contract and how the data plane reads it at now, with the repair; ""
// for a well-formed item. Every surface (list, get, status, the dashboard,
// drills) shows this sentence.
func (o Override) MalformedSummary(now time.Time) string {
	if !o.Malformed() {
		return ""
	}
	parts := make([]string, len(o.Problems))
	for i, p := range o.Problems {
		parts[i] = p.Attribute + ": " + p.Problem
	}
	var reading string
	switch {
	case o.State != OverrideStateForcedOpen:
		reading = "not in force (its state is not forced_open)"
	case o.HasProblem(attrExpiresAt):
		reading = "in force until cleared (an unreadable expiry counts as none)"
	case o.ActiveAt(now):
		reading = "in force"
	default:
		reading = "expired"
	}
	return fmt.Sprintf("malformed override item (%s): %s; %s",
		strings.Join(parts, "; "), reading, o.Repair())
}

// Repair says how to remove or replace the item in one command: `breaker
// clear DEPENDENCY` (or force-open --overwrite), or, for a pk that is not a
// valid dependency name, `breaker clear --key 'breaker#Bad Name'` (the pk
// quoted for a POSIX shell). A pk holding what a terminal would not show as
// typed (a control character such as ESC or NUL, a bidi mark, bytes that
// are not UTF-8) cannot be pasted back: it is named by --key-hex, the pk's
// bytes in hexadecimal.
func (o Override) Repair() string {
	if ValidateDependency(o.Dependency) != nil {
		pk := OverrideKey(o.Dependency)
		if textsafe.Line(pk) != pk {
			return "remove it with koshactl breaker clear --key-hex " + hex.EncodeToString([]byte(pk))
		}
		return "remove it with koshactl breaker clear --key " + textsafe.ShellQuote(pk)
	}
	return "repair it with koshactl breaker clear " + o.Dependency + ", or force-open --overwrite"
}

// ActiveAt applies the data plane's rule: an override is active iff its item
// exists, its state is forced_open and expires_at is absent or after now.
//
// A malformed item follows the same rule with one addition, safety first: a
// malformed expires_at counts as absent, so an item whose state is
// forced_open stays active until it is cleared. The operator meant to force
// the breaker; releasing it because an expiry could not be read would send
// traffic to a dependency someone took out of service, unseen. A malformed
// state (absent, not a string, or another word) is inactive: nothing says the
// breaker should be forced.
func (o Override) ActiveAt(now time.Time) bool {
	if o.State != OverrideStateForcedOpen {
		return false
	}
	return o.ExpiresAt.IsZero() || now.Before(o.ExpiresAt)
}

// Expires reports whether the override has a valid expiry.
func (o Override) Expires() bool { return !o.ExpiresAt.IsZero() }

// ForceAt is the override as the data plane's override source reports it
// at now.
func (o Override) ForceAt(now time.Time) Force {
	f := Force{Active: o.ActiveAt(now), ExpiresAt: o.ExpiresAt, Reason: o.Reason}
	if o.Malformed() {
		f.Malformed = o.Problems[0].Error()
	}
	return f
}

// Item encodes the override as a store item following the contract.
func (o Override) Item() store.Item {
	it := store.Item{
		store.PK:      OverrideKey(o.Dependency),
		attrState:     o.State,
		attrReason:    o.Reason,
		attrActor:     o.Actor,
		attrCreatedAt: o.CreatedAt.UnixMilli(),
		attrVersion:   o.Version,
	}
	// Additive: places the item in the lists and overrides indexes (Each).
	for k, v := range indexAttrs(it.PK()) {
		it[k] = v
	}
	if o.WriteID != "" {
		it[attrWriteID] = o.WriteID
	}
	if o.ManagedBy != "" {
		it[attrManagedBy] = o.ManagedBy
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

// OverrideFromItem decodes a stored override item. Its error (wrapping
// ErrInvalidOverride) is reserved for an item that is not an override at all
// (a pk outside breaker#); every other departure from the contract is
// decoded as far as it goes and listed in Override.Problems, so the item can
// still be shown, and cleared or replaced in one command.
func OverrideFromItem(it store.Item) (Override, error) {
	pk := it.PK()
	dep, ok := strings.CutPrefix(pk, OverridePrefix)
	if !ok || dep == "" {
		return Override{}, fmt.Errorf("%w: pk %q does not start with %q", ErrInvalidOverride, pk, OverridePrefix)
	}
	d := store.NewDecoder(it)
	o := Override{Dependency: dep, Raw: it.Clone()}
	if ValidateDependency(dep) != nil {
		d.Problem(store.PK, "want breaker#<dependency>: 1-63 of a-z, 0-9 and inner hyphens")
	}
	if o.State, _ = it[attrState].(string); o.State != OverrideStateForcedOpen {
		d.Problem(attrState, `want S "forced_open"`)
	}
	o.Reason = d.Str(attrReason, true)
	if n := textsafe.Len(o.Reason); n > audit.MaxReasonLen {
		d.Problem(attrReason, fmt.Sprintf("%d characters, want at most %d", n, audit.MaxReasonLen))
	}
	o.Actor = d.Str(attrActor, true)
	o.ManagedBy, _ = it[attrManagedBy].(string)
	o.WriteID = it.WriteID()
	o.Approval = lever.ApprovalOf(it, attrApproval)
	o.CreatedAt = d.Time(attrCreatedAt, true)
	o.ExpiresAt = d.Time(attrExpiresAt, false)
	o.Version = d.Version(attrVersion)
	d.TTL()
	o.Problems = d.Problems
	return o, nil
}

// condition returns the condition under which a write may replace or delete
// the item o was read from ([lever.Unchanged]): that it still carries its
// write_id, or else its version attribute exactly as stored.
func (o Override) condition() store.Condition { return lever.Unchanged(o.Raw, attrVersion, o.Version) }

// nextVersion is the version a replacement of o carries
// ([lever.NextVersion]).
func (o Override) nextVersion() int64 {
	return lever.NextVersion(o.Raw, attrVersion, o.Version, o.HasProblem(attrVersion))
}

// OverrideStore is what [Overrides] needs of a store.
type OverrideStore interface {
	Get(ctx context.Context, pk string) (store.Item, error)
	Transact(ctx context.Context, c store.Change) error
	// Put is for [Overrides.Backfill] alone, which adds an index attribute
	// and changes no lever.
	Put(ctx context.Context, item store.Item, cond store.Condition) error
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
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
// at the current time. It makes *Overrides the data plane's override source
// (the reference data plane's watcher caches it): an absent item is an inactive Force, a store error is
// returned so the watcher keeps its last known value.
func (s *Overrides) ForcedOpen(ctx context.Context, dependency string) (Force, error) {
	it, err := s.store.Get(ctx, OverrideKey(dependency))
	if errors.Is(err, store.ErrNotFound) {
		it, err = nil, nil
	}
	if err != nil {
		return Force{}, fmt.Errorf("read override %s: %w", dependency, err)
	}
	return ForceOf(it, s.clock.Now())
}

// List returns every override item in the table (active or expired),
// sorted by dependency, found with a scan of the override prefix: the
// complete answer, including items written by hand or by another tool
// without the index attributes, which [Overrides.ListForWith] cannot
// see unless they belong to a known dependency. Its cost is the table's
// size; it is for `breaker clear --all` and `breaker list --scan`, where
// completeness matters more than cost.
func (s *Overrides) List(ctx context.Context) ([]Override, error) {
	var list []Override
	_, err := s.scanList(ctx, nil, func(o Override) bool { list = append(list, o); return true })
	return list, err
}

// scanList lists overrides with a scan of the table (for stores without
// indexes, tables that lack the overrides indexes, and [Overrides.List]),
// sorted, so it holds them all; and reads the items under extra beside
// the scan (in its first round trip), absent ones left out.
func (s *Overrides) scanList(ctx context.Context, extra []string, yield func(Override) bool) (map[string]store.Item, error) {
	var (
		extras map[string]store.Item
		xerr   error
		wg     sync.WaitGroup
	)
	if len(extra) > 0 {
		wg.Go(func() { extras, xerr = store.GetFew(ctx, s.store, extra) })
	}
	var items []store.Item
	var err error
	for it, serr := range s.store.Scan(ctx, store.ScanQuery{Prefix: OverridePrefix}) {
		if serr != nil {
			err = fmt.Errorf("list overrides: %w", serr)
			break
		}
		items = append(items, it)
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if xerr != nil {
		return nil, fmt.Errorf("list overrides: %w", xerr)
	}
	list, err := overridesFrom(items)
	if err != nil {
		return nil, err
	}
	for _, o := range list {
		if !yield(o) {
			return nil, errStopped
		}
	}
	return extras, nil
}

// overridesFrom decodes override items (each malformed one flagged, never
// dropped), sorted by dependency.
func overridesFrom(items []store.Item) ([]Override, error) {
	out := make([]Override, 0, len(items))
	for _, it := range items {
		o, err := OverrideFromItem(it)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dependency < out[j].Dependency })
	return out, nil
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
// we were acting). Its message says what is there, in the override's terms:
// how to replace it is each surface's hint (--overwrite for the CLI,
// overwrite: true in a drill), as for [UnknownDependencyError].
type ConflictError struct {
	Current Override
	// Raced is true when the item changed between our read and our write.
	Raced bool
}

// ErrConflict matches a *ConflictError with errors.Is.
var ErrConflict = lever.ErrConflict

func (e *ConflictError) Error() string {
	c := e.Current
	what := fmt.Sprintf("%s is already forced open by %s (reason: %s", c.Dependency, textsafe.Line(textsafe.Truncate(c.Actor, textsafe.MaxQuoted)), textsafe.Quote(c.Reason))
	if c.Expires() {
		what += ", expires " + c.ExpiresAt.Format(time.RFC3339)
	}
	what += ")"
	if c.Malformed() {
		what += fmt.Sprintf("; the item is malformed (%s: %s)", c.Problems[0].Attribute, c.Problems[0].Problem)
	}
	if e.Raced {
		return what + "; it changed while koshactl was acting: review it, then re-run"
	}
	return what
}

// Is makes errors.Is(err, ErrConflict) true, and its kind ErrConflict's.
func (e *ConflictError) Is(target error) bool { return errors.Is(ErrConflict, target) }

// decideForce is the rule of a force of dep at now: an active override is
// replaced only when the caller saw it (SeenVersion) or asked to
// (Overwrite); the new item's stamps are now's, its version the next after
// before's.
func decideForce(dep, reason, actor string, p ForceParams, before *Override, now time.Time) (ForceResult, error) {
	res := ForceResult{Before: before}
	if before != nil && before.ActiveAt(now) {
		switch {
		case p.SeenVersion != nil && before.Version != *p.SeenVersion:
			return res, &ConflictError{Current: *before, Raced: true}
		case p.SeenVersion != nil:
			// The override the caller saw: replacing it was agreed.
		case !p.Overwrite:
			return res, &ConflictError{Current: *before}
		}
		res.Replaced = true
	}
	res.After = Override{Dependency: dep, State: OverrideStateForcedOpen, Reason: reason, Actor: actor, Version: 1, ManagedBy: p.ManagedBy}
	if before != nil {
		res.After.Version = before.nextVersion()
	}
	stampForce(&res.After, p, now)
	return res, nil
}

// CheckForce is the rule of a force with params p applied to before (the
// item read, nil when absent) at now, writing nothing: the *ConflictError
// such a force would meet, or nil. A drill checks its lever with it before
// the drill starts and forces it later, once.
func CheckForce(p ForceParams, before *Override, now time.Time) error {
	_, err := decideForce("", "", "", p, before, now)
	return err
}

// stampForce sets after's created_at to now and its expiry from req: For
// after created_at, else req.ExpiresAt, else never.
func stampForce(after *Override, p ForceParams, now time.Time) {
	after.CreatedAt = now.UTC().Truncate(time.Millisecond)
	after.ExpiresAt = p.ExpiresAt.UTC().Truncate(time.Millisecond)
	switch {
	case p.For > 0:
		after.ExpiresAt = after.CreatedAt.Add(p.For)
	case p.ExpiresAt.IsZero():
		after.ExpiresAt = time.Time{}
	}
}

// ClearResult says what a clear did.
type ClearResult struct {
	// Before is the item that was deleted; nil when there was nothing to clear.
	Before *Override
	// WasActive is true when the deleted override was still in force.
	WasActive bool
}
