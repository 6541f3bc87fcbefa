package approval

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Review statuses.
const (
	ReviewOpen         = "open"
	ReviewAcknowledged = "acknowledged"
)

// Review is what a break-glass change leaves: listed (request list
// --reviews) until someone other than its actor acknowledges it.
type Review struct {
	ID          string            `json:"id"`
	Action      string            `json:"action"`
	Targets     []string          `json:"targets"`
	Reason      string            `json:"reason"`
	Actor       string            `json:"actor"`
	ActorSource audit.ActorSource `json:"actor_source,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	Status      string            `json:"status"`
	// Change is the token of the break-glass change (its records' change).
	Change  string    `json:"change"`
	AckedBy string    `json:"acknowledged_by,omitempty"`
	AckedAt time.Time `json:"acknowledged_at,omitzero"`
	Note    string    `json:"note,omitempty"`
	// Proofs are the keys of the review's proofs: the break-glass change's
	// (by its actor) and the acknowledgement's.
	Proofs []string `json:"proofs,omitempty"`
	// Verification is what reading the proofs found (request list reads
	// them): a review whose acknowledgement no proof shows reads open.
	Verification
	// Place is where a listing read it, as [Request.Place].
	Place string `json:"-"`

	raw store.Item
}

const (
	attrAction  = "action"
	attrTargets = "targets"
	attrReason  = "reason"
	attrActor   = "actor"
	attrSource  = "actor_source"
	attrAckedBy = "acknowledged_by"
	attrAckedAt = "acknowledged_at"
)

func (r Review) item(token string) store.Item {
	it := store.Item{
		store.PK:          ReviewPrefix + r.ID,
		attrAction:        r.Action,
		attrTargets:       strings.Join(r.Targets, ","),
		attrReason:        r.Reason,
		attrActor:         r.Actor,
		attrCreatedAt:     r.CreatedAt.UnixMilli(),
		attrStatus:        r.Status,
		attrAppliedChange: r.Change,
		store.WriteIDAttr: token,
	}
	for k, v := range map[string]string{attrSource: string(r.ActorSource), attrNote: r.Note} {
		if v != "" {
			it[k] = v
		}
	}
	listEntry(it, r.CreatedAt, r.ID)
	if r.AckedBy != "" {
		it[attrAckedBy], it[attrAckedAt] = r.AckedBy, r.AckedAt.UnixMilli()
		// An acknowledged review is kept as long as the records.
		it[store.TTLAttr] = r.AckedAt.Add(Retention).Unix()
	}
	if len(r.Proofs) > 0 {
		proofs, _ := json.Marshal(r.Proofs)
		it[attrProofs] = string(proofs)
	}
	return it
}

// ReviewFromItem decodes a stored review.
func ReviewFromItem(it store.Item) (Review, error) {
	id, ok := strings.CutPrefix(it.PK(), ReviewPrefix)
	if !ok || id == "" {
		return Review{}, fmt.Errorf("%w: %q is not a review key (review#<id>)", ErrMalformed, it.PK())
	}
	r := Review{ID: id, Action: it.Str(attrAction), Reason: it.Str(attrReason), Actor: it.Str(attrActor),
		ActorSource: audit.ActorSource(it.Str(attrSource)), Status: it.Str(attrStatus), Change: it.Str(attrAppliedChange),
		AckedBy: it.Str(attrAckedBy), Note: it.Str(attrNote), raw: it}
	if t := it.Str(attrTargets); t != "" {
		r.Targets = strings.Split(t, ",")
	}
	ms, ok := it.Int(attrCreatedAt)
	if !ok || r.Actor == "" || (r.Status != ReviewOpen && r.Status != ReviewAcknowledged) {
		return Review{}, fmt.Errorf("%w: review %s does not follow its contract (actor, created_at, status)", ErrMalformed, id)
	}
	r.CreatedAt = time.UnixMilli(ms).UTC()
	if ms, ok := it.Int(attrAckedAt); ok {
		r.AckedAt = time.UnixMilli(ms).UTC()
	}
	if s := it.Str(attrProofs); s != "" {
		if err := json.Unmarshal([]byte(s), &r.Proofs); err != nil {
			return Review{}, fmt.Errorf("%w: review %s: its proofs attribute cannot be read", ErrMalformed, id)
		}
	}
	return r, nil
}

// proofOf is the proof of r by w's verb, made at at: it binds the
// break-glass change (its token).
func (r Review) proofOf(w proof.Writer, verb string, at time.Time) proof.Proof {
	return proof.Proof{Writer: w, Verb: verb, Kind: proof.KindReview, Subject: r.ID, Binding: r.Change, At: at.UTC().Truncate(time.Millisecond)}
}

// reviewTrail is what a review's proofs say.
type reviewTrail struct {
	// glass is the break-glass change's proof (nil: none: the review was
	// made before koshactl kept proofs, or by hand).
	glass *proof.Proof
	// ack is the acknowledgement, by someone other than glass's writer.
	ack *proof.Proof
	// err says how the item disagrees with them (ErrTampered), or that it
	// has no break-glass proof (ErrApprovalUnproven's kind).
	err error
}

// glassOf is every proof of breaking review id's glass among items (all
// the table's proofs, as a listing scans them), named by the review or not.
func glassOf(items map[string]store.Item, id string) []proof.Proof {
	var out []proof.Proof
	for pk, it := range items {
		if !strings.HasPrefix(pk, proof.Prefix) {
			continue
		}
		if p, err := proof.FromItem(it); err == nil && p.Kind == proof.KindReview && p.Verb == proof.Glass && p.Subject == id {
			out = append(out, p)
		}
	}
	return out
}

// trailOf reads what r's proofs (items, read by key) say of it. glass are
// the proofs of breaking its glass found beyond those it names (nil when
// not looked for): a review that names none, while one exists, was
// written without koshactl (an operator-role Put dropping it from the
// item, to acknowledge its own change), and an acknowledgement by that
// proof's writer is none.
func (r Review) trailOf(items map[string]store.Item, glass []proof.Proof) reviewTrail {
	var t reviewTrail
	bad := func(why string) reviewTrail {
		t.err = fmt.Errorf("%w: review %s %s: its item was written without koshactl", ErrTampered, r.ID, why)
		return t
	}
	for _, pk := range r.Proofs {
		it, ok := items[pk]
		if !ok {
			return bad("names the proof " + textsafe.Quote(pk) + ", which does not exist")
		}
		p, err := proof.FromItem(it)
		switch {
		case err != nil:
			return bad("names a proof that cannot be read (" + textsafe.Line(err.Error()) + ")")
		case p.Kind != proof.KindReview || p.Subject != r.ID || p.Binding != r.Change:
			return bad("names " + textsafe.Quote(pk) + ", which is no proof of its change")
		case p.Verb == proof.Glass && t.glass == nil:
			t.glass = &p
		case p.Verb == proof.Ack && t.ack == nil:
			t.ack = &p
		default:
			return bad("names two proofs of one kind")
		}
	}
	if t.glass == nil && len(glass) > 0 {
		g := glass[0]
		if t.ack != nil && slices.ContainsFunc(glass, func(g proof.Proof) bool { return t.ack.Writer.SamePerson(g.Writer) }) {
			t.ack = nil
		}
		return bad(fmt.Sprintf("names no proof of who broke the glass, and %s's exists (%s)", textsafe.Line(g.Writer.Name), textsafe.Quote(g.Key())))
	}
	switch {
	case t.glass != nil && t.glass.Writer.Name != r.Actor:
		return bad(fmt.Sprintf("says %s broke the glass, and its proof is %s's", textsafe.Line(r.Actor), textsafe.Line(t.glass.Writer.Name)))
	case t.ack != nil && (t.ack.Writer.Name == r.Actor || t.glass != nil && t.ack.Writer.SamePerson(t.glass.Writer)):
		t.ack = nil
		return bad("was acknowledged by the one who broke the glass")
	case t.ack != nil && (r.Status != ReviewAcknowledged || r.AckedBy != t.ack.Writer.Name):
		return bad("says it is " + r.Status + " by " + textsafe.Line(r.AckedBy) + ", and its proof says acknowledged by " + textsafe.Line(t.ack.Writer.Name))
	case t.ack == nil && r.Status == ReviewAcknowledged:
		return bad("says it is acknowledged, and no proof of an acknowledgement exists")
	case t.glass == nil:
		t.err = fmt.Errorf("%w: review %s names no proof of who broke the glass (made before koshactl kept proofs, or by hand)", ErrApprovalUnproven, r.ID)
	}
	return t
}

// verify reads what r's proofs say into r: its Verification, and its
// status as they show it (open, unless an acknowledgement's proof says
// otherwise). items hold every proof of the table (a listing's scan).
func (r *Review) verify(items map[string]store.Item) {
	t := r.trailOf(items, glassOf(items, r.ID))
	r.Verification = verification(t.err)
	if t.ack == nil {
		r.Status = ReviewOpen
	}
}
