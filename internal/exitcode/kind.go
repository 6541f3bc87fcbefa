package exitcode

import (
	"context"
	"errors"
	"fmt"
)

// Kind is a kind of failure, named by the code it exits with: [NotFound],
// [Conflict], [Unavailable], ... An error says its kind by matching it with
// errors.Is, so [Of] finds it through any wrapping:
//
//   - a domain package declares its sentinel errors with [New]
//     (store.ErrNotFound is New(NotFound, "item not found"));
//   - an error type that matches such a sentinel with an Is method matches
//     its kind too when it asks errors.Is(sentinel, target);
//   - a command that fails for a reason of its own (a protected context, a
//     journal in use) returns a [*Failure] ([Errorf], [Wrap]).
type Kind int

// Error makes a Kind the target errors.Is matches an error of that kind
// with; it is never returned as an error itself.
func (k Kind) Error() string { return "exit " + k.String() }

// String is the kind's name in docs/exit-codes.md.
func (k Kind) String() string {
	if n, ok := names[int(k)]; ok {
		return n
	}
	return fmt.Sprintf("code %d", int(k))
}

var names = map[int]string{
	OK: "ok", Error: "error", Usage: "usage", NotFound: "not found", Conflict: "conflict", Unavailable: "unavailable",
	Auth: "auth", Refused: "refused", Unknown: "unknown", Rollback: "rollback failed", Partial: "partial",
	Unconfirmed: "unconfirmed", Pending: "pending", Closed: "closed", Mismatch: "mismatch", RolledBack: "rolled back", PartialWrite: "partial write",
	Interrupted: "canceled",
}

// New returns a sentinel error with text that is of kind k: errors.Is of it
// (or of anything wrapping it) and k holds. Compare it with errors.Is as any
// sentinel.
func New(k Kind, text string) error { return &sentinel{text: text, kind: k} }

type sentinel struct {
	text string
	kind Kind
}

func (e *sentinel) Error() string { return e.text }

// Is makes the sentinel match its kind.
func (e *sentinel) Is(target error) bool { return target == e.kind }

// Failure is a failure whose kind the code that reports it decides: a
// command's own refusal, a usage mistake it found, an outcome it reports
// (a drill's, a list's). It wins over the kinds of the errors it wraps,
// and an interrupted command whose error is a Failure keeps its code (a
// drill whose rollback failed after Ctrl-C still exits 9).
type Failure struct {
	Kind Kind
	Err  error
}

func (e *Failure) Error() string { return e.Err.Error() }
func (e *Failure) Unwrap() error { return e.Err }

// Is makes the failure match its kind.
func (e *Failure) Is(target error) bool { return target == e.Kind }

// Errorf returns a [*Failure] of kind k with a formatted message (%w wraps,
// as with fmt.Errorf).
func Errorf(k Kind, format string, args ...any) error {
	return &Failure{Kind: k, Err: fmt.Errorf(format, args...)}
}

// Wrap returns err as a [*Failure] of kind k; nil stays nil.
func Wrap(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Failure{Kind: k, Err: err}
}

// precedence orders the kinds one error may carry at once, first wins: an
// unknown outcome is the one fact an operator must not miss; an
// interruption explains the failures it caused; a refusal of the store
// (conflict) or of the operator's input (usage) says more than the
// unavailability met on the way.
var precedence = []Kind{Rollback, Unconfirmed, Partial, Pending, Unknown, RolledBack, PartialWrite, Interrupted, Closed, Mismatch, Conflict, Refused, Usage,
	NotFound, Auth, Unavailable}

// Of is the exit code of err (docs/exit-codes.md): the one place an error
// becomes a code, used where the process ends (internal/cmd/root) and by
// the drill journal. nil is [OK]; a [*Failure] is its kind (the outermost
// one); otherwise the kind err matches, by precedence; context.Canceled is
// [Interrupted] and context.DeadlineExceeded [Unavailable]; anything else
// is [Error].
func Of(err error) int {
	if err == nil {
		return OK
	}
	var f *Failure
	if errors.As(err, &f) {
		return int(f.Kind)
	}
	return int(KindOf(err))
}

// KindOf is the kind err matches, by precedence (a [*Failure]'s among
// them); [Error] when it matches none.
func KindOf(err error) Kind {
	for _, k := range precedence {
		if errors.Is(err, k) {
			return k
		}
		switch {
		case k == Interrupted && errors.Is(err, context.Canceled),
			k == Unavailable && errors.Is(err, context.DeadlineExceeded):
			return k
		}
	}
	return Error
}

// Decided reports whether the code of err was decided by a [*Failure]
// rather than found from the kinds of the errors it wraps.
func Decided(err error) bool {
	var f *Failure
	return errors.As(err, &f)
}

// Default returns err as of kind k unless err matches a kind of its own: a
// read that failed is unavailable unless its cause says it was denied.
// Unlike a [*Failure], it decides nothing its cause can say; nil stays nil.
func Default(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &fallback{err: err, kind: k}
}

type fallback struct {
	err  error
	kind Kind
}

func (e *fallback) Error() string { return e.err.Error() }
func (e *fallback) Unwrap() error { return e.err }

// Is matches the fallback kind when the wrapped error matches none.
func (e *fallback) Is(target error) bool { return target == e.kind && KindOf(e.err) == Error }
