package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// WriteIDAttr is the attribute every control-plane write stamps with a token
// of its own (docs/contracts/store.md): an S of 32 hex digits, new for each
// write. When a write's answer is lost (a connection reset or a timeout after
// the request was sent) and the retry meets the write's own condition, a
// re-read tells "my write landed" (the item carries my token) from "someone
// else's write" (it does not). The data plane ignores the attribute.
const WriteIDAttr = "write_id"

// NewWriteID returns a fresh write token: 128 random bits, as 32 hex digits.
func NewWriteID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate write id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// WriteID returns the write token item carries, "" when it has none (an item
// written by hand or by another tool) or the attribute is not a string.
func (it Item) WriteID() string {
	s, _ := it[WriteIDAttr].(string)
	return s
}

// Retried reports whether err is a refused condition on a retry of an attempt
// whose answer was lost ([ConditionError.Retried]).
func Retried(err error) bool {
	var ce *ConditionError
	return errors.As(err, &ce) && ce.Retried
}

// MayHaveApplied reports whether a write that failed with err may still have
// been applied, so the writer must re-read to learn what it did: a refused
// condition (the refusal may be the client's retry meeting the write's own
// condition), or a store that could not be reached or answered with a server
// error after the request may have gone out. A throttled, unauthorized or
// invalid write was not applied; a canceled one is not resolved (the caller
// asked to stop).
func MayHaveApplied(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, ErrConditionFailed) || (errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrThrottled))
}

// RereadTimeout bounds the re-read that resolves a write the caller's
// cancellation interrupted ([RereadContext]).
const RereadTimeout = 5 * time.Second

// RereadContext says whether a write that failed with writeErr on ctx must be
// resolved by a re-read, and returns the context to re-read on (call cancel
// when done). It is [MayHaveApplied]'s rule, plus the interrupt: a write the
// caller's cancellation (or deadline) stopped while it may have been in
// flight may still have been applied, so the cancellation says nothing of
// the outcome; that re-read runs on a context of its own (the caller's
// values, not its cancellation), bounded by RereadTimeout, so a landed write
// is reported and audited, never left behind "context canceled". ok is
// false when writeErr says the write was never applied (throttling,
// credentials, a missing table, a refused item): nothing is to be read.
func RereadContext(ctx context.Context, writeErr error) (rctx context.Context, cancel context.CancelFunc, ok bool) {
	if Interrupted(ctx, writeErr) {
		rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), RereadTimeout)
		return rctx, cancel, true
	}
	return ctx, func() {}, MayHaveApplied(ctx, writeErr)
}

// Interrupted reports whether writeErr is the caller's own cancellation (or
// deadline) of ctx, which may have stopped the write in flight.
func Interrupted(ctx context.Context, writeErr error) bool {
	return ctx.Err() != nil && (errors.Is(writeErr, context.Canceled) || errors.Is(writeErr, context.DeadlineExceeded))
}

// Notes every surface prints after a write whose answer was lost and which
// a re-read resolved (one sentence, so the commands, the dashboard and
// drills say it alike).
const (
	// ConfirmedNote follows a change whose answer was lost and which
	// [Apply] settled as landed.
	ConfirmedNote = "the first response was lost; the change was confirmed (it is recorded once)"
)
