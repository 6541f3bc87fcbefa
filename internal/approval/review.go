package approval

import (
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
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
	if r.ActorSource != "" {
		it[attrSource] = string(r.ActorSource)
	}
	if r.AckedBy != "" {
		it[attrAckedBy], it[attrAckedAt] = r.AckedBy, r.AckedAt.UnixMilli()
		// An acknowledged review is kept as long as the records.
		it[store.TTLAttr] = r.AckedAt.Add(Retention).Unix()
	}
	if r.Note != "" {
		it[attrNote] = r.Note
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
	return r, nil
}
