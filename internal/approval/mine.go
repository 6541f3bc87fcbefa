package approval

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/policy"
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

// Awaits reports whether r waits on id at now, under the table's policy
// as read (stored; nil: the table has none): r is pending, proven and
// untampered, and id is a verified identity that neither asked for it nor
// approved it already (by person), whose approval the policy would take,
// as [Service.Approve] asks it. What an approval checks beyond the
// policy's decision (the policy's own proof, the change's hash, the
// items the change needs) is checked when id approves.
func (s *Service) Awaits(r Request, stored *policy.Stored, id audit.Identity, now time.Time) bool {
	if r.StatusAt(now) != StatusPending || r.Tampered != "" || r.Unproven != "" || !id.Verified() {
		return false
	}
	w, err := proof.WriterOf(id)
	if err != nil {
		return false
	}
	t, err := r.trailOf(nil, false)
	if err != nil || t.ask.Writer.SamePerson(w) || t.approvedBy(w) {
		return false
	}
	var set *policy.Set
	switch {
	case stored != nil:
		set = stored.Set
	case len(r.Policies) > 0:
		return false // asked under a policy the table no longer has: Approve refuses it
	}
	_, err = s.judge(set, r, t.requester(), id.Actor, len(t.approvals)+1, now)
	return err == nil
}
