package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kosha-platform/koshactl/internal/store"
)

// legacyClaimPrefix starts the pk of the claims an older koshactl wrote
// beside a clear's record ("audit#claim#<write id>"). They are not records:
// every read ignores them, and nothing koshactl decides trusts them.
const legacyClaimPrefix = Prefix + "claim#"

// isLegacyClaim reports whether pk is an older koshactl's claim.
func isLegacyClaim(pk string) bool { return strings.HasPrefix(pk, legacyClaimPrefix) }

// Stage returns the record e describes as the n-th record of the change
// whose token is token, and the write that stores it as part of that
// change ([store.Change]): it is written with the lever it records, in one
// transaction, under attribute_not_exists(pk), or not at all. The record's
// pk follows from the change (the clock's now and an id made from token and
// n), and the record carries the token as its write_id, so the change's
// re-issue writes the same item and a record found under that pk is this
// change's. Stage writes nothing.
//
// A before or after document too large for the record (an override of
// ~400 KB) is replaced by a summary naming its size and SHA-256, so every
// change can be recorded whatever the item it replaced.
func (l *Log) Stage(ctx context.Context, e Entry, token string, n int) (Record, store.Op, error) {
	if token == "" {
		return Record{}, store.Op{}, fmt.Errorf("%w: a record of a change needs the change's token", ErrAuditWrite)
	}
	r, err := l.record(ctx, e, changeID(token, n))
	if err != nil {
		return Record{}, store.Op{}, err
	}
	r.Change, r.DataPlane, r.Asked = token, l.prefix == DataPlanePrefix, l.prefix == RequestPrefix
	it := r.item()
	if it.Size() > store.MaxItemBytes || it.Validate() != nil {
		r.Before, r.After = omitted(r.Before), omitted(r.After)
		it = r.item()
	}
	if err := it.Validate(); err != nil {
		return Record{}, store.Op{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	return r, store.PutOp(it, store.IfAbsent()), nil
}

// maxDocBytes is the largest before or after document a record keeps
// whole when the record would not fit in an item otherwise.
const maxDocBytes = 64 * 1024

// omitted replaces a document longer than maxDocBytes by a summary of it.
func omitted(doc json.RawMessage) json.RawMessage {
	if len(doc) <= maxDocBytes {
		return doc
	}
	sum := sha256.Sum256(doc)
	b, _ := json.Marshal(map[string]any{
		"omitted": "the document was " + strconv.Itoa(len(doc)) + " bytes, more than a record holds",
		"sha256":  hex.EncodeToString(sum[:]),
	})
	return b
}

// changeID is the id of the n-th record of the change token: 16 hex digits
// of SHA-256(token#n), the same on every send of the change.
func changeID(token string, n int) string {
	sum := sha256.Sum256([]byte(token + "#" + strconv.Itoa(n)))
	return hex.EncodeToString(sum[:8])
}

// Append writes one record on its own, as a change of one write
// ([store.Apply]): the record of an action that changes no lever (a
// minted chaos header, a rotated key, the data plane's chaos outcomes).
// Its error wraps ErrAuditWrite; when the store could not be reached to
// settle a lost answer it also wraps [ErrAuditUnknown].
func (l *Log) Append(ctx context.Context, e Entry) (Record, error) {
	token, err := store.NewWriteID()
	if err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	r, op, err := l.Stage(ctx, e, token, 0)
	if err != nil {
		return Record{}, err
	}
	if _, err := store.Apply(ctx, l.store, store.Change{Token: token, Ops: []store.Op{op}, Proof: op.PK()}); err != nil {
		if errors.Is(err, store.ErrOutcomeUnknown) {
			return Record{}, fmt.Errorf("%w: look for it with koshactl audit list --subject %s: %w", ErrAuditUnknown, r.Subject, err)
		}
		return Record{}, fmt.Errorf("%w: %w", ErrAuditWrite, err)
	}
	return r, nil
}
