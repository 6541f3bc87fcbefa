package approval

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/proof"
)

// AskedBy reports whether id asked for r: r's proof of asking is id's
// person's ([proof.Writer.SamePerson]: alice under another role too). A
// request whose proofs disagree with its item is asked by nobody.
func (r Request) AskedBy(id audit.Identity) bool {
	w, err := proof.WriterOf(id)
	if err != nil || r.Tampered != "" {
		return false
	}
	for _, pk := range r.Proofs {
		if p, err := proof.ParseKey(pk); err == nil && p.Verb == proof.Ask && p.Kind == proof.KindRequest && p.Subject == r.ID {
			return p.Writer.SamePerson(w)
		}
	}
	return false
}

// Awaits reports whether r waits on id at now: pending, proven and
// untampered, and id is a verified identity that neither asked for it nor
// approved it already (by person). The policy, which may still refuse
// id, is asked when id approves.
func (r Request) Awaits(id audit.Identity, now time.Time) bool {
	if r.StatusAt(now) != StatusPending || r.Tampered != "" || r.Unproven != "" || !id.Verified() {
		return false
	}
	w, err := proof.WriterOf(id)
	if err != nil {
		return false
	}
	t, err := r.trailOf(nil, false)
	return err == nil && !t.ask.Writer.SamePerson(w) && !t.approvedBy(w)
}
