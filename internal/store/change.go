package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// MaxChangeOps is the most item writes one [Change] may hold: DynamoDB's
// limit on the actions of one TransactWriteItems call. A larger change is
// split by its caller, each part a change of its own with its own outcome.
const MaxChangeOps = 100

// MaxChangeBytes is the most one [Change] may write: DynamoDB's 4 MB
// aggregate limit of a transaction, counted like [Item.Validate] counts an
// item.
const MaxChangeBytes = 4 * 1000 * 1000

// Op is one item's write in a [Change]: a whole item put, or a key deleted,
// each under its own condition; or a check of an item the change writes
// nothing to, whose condition must hold all the same. Build one with
// [PutOp], [DeleteOp] or [CheckOp].
type Op struct {
	// Put is the item written whole (nil for a delete or a check).
	Put Item
	// Delete is the pk removed (when Put is nil and Check is empty).
	Delete string
	// Check is the pk of an item only checked: its condition must hold
	// for the change to apply, and nothing is written to it (DynamoDB's
	// ConditionCheck).
	Check string
	// Cond must hold for the item as stored when the change is applied.
	Cond Condition
}

// PutOp writes it whole if cond holds.
func PutOp(it Item, cond Condition) Op { return Op{Put: it, Cond: cond} }

// DeleteOp removes the item under pk if cond holds.
func DeleteOp(pk string, cond Condition) Op { return Op{Delete: pk, Cond: cond} }

// CheckOp makes the change conditional on the item under pk, which it
// does not write: the change applies only if cond holds for it. cond is
// never [Always] (a check of nothing).
func CheckOp(pk string, cond Condition) Op { return Op{Check: pk, Cond: cond} }

// PK is the key the op writes (or checks).
func (o Op) PK() string {
	switch {
	case o.Put != nil:
		return o.Put.PK()
	case o.Check != "":
		return o.Check
	}
	return o.Delete
}

// IsCheck reports whether the op only checks its item ([CheckOp]).
func (o Op) IsCheck() bool { return o.Put == nil && o.Check != "" }

// Change is one atomic write of the control table: every op applies, or
// none does. It is how a lever change and its audit record are written
// together (docs/contracts/store.md, "One change, one transaction"): the
// lever item's write, conditional on the version it was read at, and the
// record, conditional on its key being free.
type Change struct {
	// Token names the change, new for each ([NewWriteID]: 32 hex digits).
	// DynamoDB gets it as the transaction's ClientRequestToken, so a retry
	// of the same change within ten minutes is applied once; the change's
	// items carry it as their write_id.
	Token string
	// Ops are the writes, at most [MaxChangeOps], one per key.
	Ops []Op
	// Proof is the pk of an item the change creates carrying write_id =
	// Token, under [IfAbsent], that nothing updates afterwards: the
	// change's audit record, whose key the change's token names. When the
	// change meets its own conditions (a retry on a server that does not
	// honor the token), or its answer was lost, the proof settles whether
	// it landed: it carries the token only if this change wrote it, every
	// op was written with it, and whoever changed the lever items since
	// (another operator's overwrite) leaves it as this change wrote it.
	Proof string
}

// Validate checks that the change can be sent: a token, 1 to
// [MaxChangeOps] ops on distinct keys, items and conditions the store
// takes, at most [MaxChangeBytes] in all, and a Proof among its puts that
// carries the token and creates its item ([IfAbsent]: a record, which no
// later write updates, never a lever item).
func (c Change) Validate() error {
	if c.Token == "" || len(c.Token) > 36 {
		return fmt.Errorf("%w: a change needs a token of 1 to 36 characters (store.NewWriteID)", ErrInvalidItem)
	}
	if len(c.Ops) == 0 || len(c.Ops) > MaxChangeOps {
		return fmt.Errorf("%w: a change holds 1 to %d writes, not %d: split it", ErrInvalidItem, MaxChangeOps, len(c.Ops))
	}
	seen := make(map[string]bool, len(c.Ops))
	proved, size := false, 0
	for _, op := range c.Ops {
		pk := op.PK()
		if pk == "" {
			return fmt.Errorf("%w: a write of the change names no key", ErrInvalidItem)
		}
		if seen[pk] {
			return fmt.Errorf("%w: the change writes %q twice: one write per key", ErrInvalidItem, pk)
		}
		seen[pk] = true
		if err := op.Cond.Validate(); err != nil {
			return err
		}
		if op.IsCheck() && op.Cond.IsAlways() {
			return fmt.Errorf("%w: the change checks %q without a condition: a check needs one", ErrInvalidItem, pk)
		}
		if op.Check != "" && (op.Put != nil || op.Delete != "") {
			return fmt.Errorf("%w: a write of the change both checks and writes %q", ErrInvalidItem, pk)
		}
		if op.Put == nil {
			size += len(pk)
			continue
		}
		if err := op.Put.Validate(); err != nil {
			return err
		}
		size += op.Put.Size()
		if pk == c.Proof && op.Put.WriteID() == c.Token {
			if !op.Cond.RequiresAbsent() {
				return fmt.Errorf("%w: the change's proof %q is written over an item (%s): a proof is an item the change creates (IfAbsent), its audit record, which nothing updates afterwards", ErrInvalidItem, c.Proof, op.Cond)
			}
			proved = true
		}
	}
	if size > MaxChangeBytes {
		return fmt.Errorf("%w: the change writes %d bytes, more than the %d one transaction takes: split it", ErrInvalidItem, size, MaxChangeBytes)
	}
	if !proved {
		return fmt.Errorf("%w: the change's proof %q is not one of its puts carrying its token", ErrInvalidItem, c.Proof)
	}
	return nil
}

// Size is the item's size as DynamoDB counts it (attribute names plus
// values), the measure of [MaxItemBytes]; 0 for an item that does not
// validate.
func (it Item) Size() int {
	n := 0
	for k, v := range it {
		s, err := validateValue(v, 0)
		if err != nil {
			return 0
		}
		n += len(k) + s
	}
	return n
}

// Transactor is what [Apply] needs of a backend: one all-or-nothing write
// of a change, and a strongly consistent read.
type Transactor interface {
	// Transact sends c once (a backend's client may retry it with the same
	// token). A refusal of any op's condition returns a *TxConflictError
	// and writes nothing.
	Transact(ctx context.Context, c Change) error
	Get(ctx context.Context, pk string) (Item, error)
}

// TxConflictError reports a change refused because the conditions of some
// of its writes did not hold: nothing was written. Conflicts has one entry
// per refused write, with the item as stored when the backend says
// (Current nil when it was absent or the backend cannot tell).
type TxConflictError struct {
	Conflicts []ConditionError
}

func (e *TxConflictError) Error() string {
	pks := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		pks[i] = fmt.Sprintf("%q", c.PK)
	}
	return fmt.Sprintf("change refused, nothing written: the condition on %s did not hold: %v", strings.Join(pks, ", "), ErrConditionFailed)
}

// Is makes errors.Is(err, ErrConditionFailed) true, and its kind
// ErrConditionFailed's.
func (e *TxConflictError) Is(target error) bool { return errors.Is(ErrConditionFailed, target) }

// On returns the refusal of the write of pk, if that write was refused.
func (e *TxConflictError) On(pk string) (ConditionError, bool) {
	for _, c := range e.Conflicts {
		if c.PK == pk {
			return c, true
		}
	}
	return ConditionError{}, false
}

// ErrOutcomeUnknown marks a change whose outcome nobody can tell: it may
// have been sent, and the store could not be reached to settle it (neither
// by re-issuing it nor by reading its proof). It is the one state in which
// koshactl cannot say what it did; the message says what to read to find
// out. It matches ErrUnavailable, and is of kind [exitcode.Unknown].
var ErrOutcomeUnknown error = outcomeUnknown{}

type outcomeUnknown struct{}

func (outcomeUnknown) Error() string { return "the outcome of the change is unknown" }
func (outcomeUnknown) Is(target error) bool {
	return target == ErrUnavailable || target == exitcode.Kind(exitcode.Unknown)
}

// ErrNotSent marks a change nothing of which was sent: the caller's
// cancellation stopped it first, or no attempt could connect to the store
// (a refused connection). Nothing was written. Backends wrap it with the
// cancellation or the store's error.
var ErrNotSent = errors.New("the change was not sent")

// Applied says how a change was found to have landed.
type Applied struct {
	// Confirmed is true when the change's first answer was lost (a
	// connection reset, a timeout, an interrupt) and its landing was
	// settled by re-issuing it or by reading its proof.
	Confirmed bool
}

// Apply writes c through tx, all or nothing, and settles a lost answer by
// the one rule koshactl has for it (docs/contracts/store.md):
//
//   - the backend's client retries a lost answer with the change's token,
//     which DynamoDB applies once;
//   - an interrupt (ctx canceled or past its deadline) after the change may
//     have been sent re-issues the same change, on a short context of its
//     own, so an interrupted change is settled, never left unknown;
//   - a refusal by the change's own conditions (the retry of a change that
//     landed, on a server that does not honor tokens) is settled by
//     c.Proof, the change's record: as the refusal names it, or by one
//     read; it carries the token only if the change landed, whoever moved
//     the lever since;
//   - a store that answered nothing (a timeout, an HTTP 500, a dropped
//     connection, after the SDK's retries) is read once the same way;
//   - only when that read fails too is the outcome unknown
//     ([ErrOutcomeUnknown]).
//
// A genuine conflict returns the backend's *TxConflictError; nothing was
// written.
func Apply(ctx context.Context, tx Transactor, c Change) (Applied, error) {
	if err := c.Validate(); err != nil {
		return Applied{}, err
	}
	err := tx.Transact(ctx, c)
	if err == nil {
		return Applied{}, nil
	}
	if errors.Is(err, ErrNotSent) {
		return Applied{}, err // nothing of it reached the store
	}
	lost := false
	if Interrupted(ctx, err) {
		if errors.Is(err, ErrNotSent) {
			return Applied{}, err
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RereadTimeout)
		defer cancel()
		ctx, lost = rctx, true
		if err = tx.Transact(ctx, c); err == nil {
			return Applied{Confirmed: true}, nil
		}
	}
	// A re-issue that ended on its own context (nothing else can end it)
	// was not answered, like a store that could not be reached.
	unanswered := errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrThrottled) ||
		lost && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
	if !unanswered && !errors.Is(err, ErrConditionFailed) {
		return Applied{}, err
	}
	landed, rerr := settle(ctx, tx, c, err)
	switch {
	case rerr != nil && (unanswered || lost):
		return Applied{}, fmt.Errorf("%w: the store did not answer it, nor the read that settles it (%w)",
			ErrOutcomeUnknown, rerr)
	case rerr != nil:
		return Applied{}, fmt.Errorf("%w; reading %s to tell it from this change's own retry failed: %w", err, c.Proof, rerr)
	case landed:
		return Applied{Confirmed: true}, nil
	}
	return Applied{}, err
}

// settle says whether c landed, after it failed with err. A refusal names
// the writes whose conditions failed, with the items as stored (DynamoDB's
// ALL_OLD): when c landed, the proof's own condition fails, since the proof
// is a put of c's token that no condition written before c admits twice. So
// a refusal that leaves the proof's condition holding is a conflict, and
// one that shows the proof's stored item settles it without a read.
// Otherwise (no answer, or a backend that did not say), one read of the
// proof.
func settle(ctx context.Context, tx Transactor, c Change, err error) (bool, error) {
	var tce *TxConflictError
	if errors.As(err, &tce) {
		ce, refused := tce.On(c.Proof)
		if !refused {
			return false, nil
		}
		if ce.Current != nil {
			return ce.Current.WriteID() == c.Token, nil
		}
	}
	return proven(ctx, tx, c)
}

// proven reads c's proof: true when it carries c's token.
func proven(ctx context.Context, tx Transactor, c Change) (bool, error) {
	it, err := tx.Get(ctx, c.Proof)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return it.WriteID() == c.Token, nil
}

// ApplyTo applies c to items, an in-memory table, all or nothing, as the
// in-memory stores (the sandbox's, the tests') do inside their own lock:
// every write's condition is checked against items first; when any fails
// the error is a *TxConflictError naming each refused write (with a copy
// of the item as stored) and items is left as it was. store applies to
// each put before it is kept (a normalising copy).
func (c Change) ApplyTo(items map[string]Item, keep func(Item) Item) error {
	var conflict *TxConflictError
	for _, op := range c.Ops {
		cur := items[op.PK()]
		if op.Cond.Holds(cur) {
			continue
		}
		if conflict == nil {
			conflict = &TxConflictError{}
		}
		ce := ConditionError{PK: op.PK()}
		if cur != nil {
			ce.Current = cur.Clone()
		}
		conflict.Conflicts = append(conflict.Conflicts, ce)
	}
	if conflict != nil {
		return conflict
	}
	for _, op := range c.Ops {
		switch {
		case op.IsCheck():
		case op.Put == nil:
			delete(items, op.Delete)
		default:
			items[op.PK()] = keep(op.Put)
		}
	}
	return nil
}
