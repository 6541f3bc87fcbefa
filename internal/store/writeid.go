package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// WriteIDAttr is the attribute every item a change writes carries: the
// change's token ([Change.Token], an S of 32 hex digits, new for each
// change; docs/contracts/store.md). When a change's answer is lost and its
// retry meets the change's own conditions, the token on its proof tells
// "my change landed" from "someone else's write". The data plane ignores
// the attribute.
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

// RereadTimeout bounds the re-issue of a change the caller's cancellation
// interrupted ([Apply]).
const RereadTimeout = 5 * time.Second

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
	ConfirmedNote = "the first response was lost; the change's audit record proves it landed (it is recorded once)"
)
