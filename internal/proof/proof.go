package proof

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Prefix starts the pk of every proof.
const Prefix = "proof#"

// Unverified is the writer id of a proof by an identity STS did not
// verify.
const Unverified = "unverified"

// Kinds of what a proof is about, and their verbs.
const (
	// KindRequest: a change request (approval.RequestPrefix + subject).
	KindRequest = "request"
	// KindReview: a break-glass review.
	KindReview = "review"
	// KindPolicy: the table's change policy; the subject is its version.
	KindPolicy = "policy"
)

// Verbs: what the writer did.
const (
	// Ask: the writer asked for the request (its requester).
	Ask = "ask"
	// Approve: the writer approved the request's change (its hash).
	Approve = "approve"
	// Deny: the writer, not the requester, closed the request unapplied.
	Deny = "deny"
	// Cancel: the requester closed their own request.
	Cancel = "cancel"
	// Expire: the writer found the request past its expiry and closed it.
	Expire = "expire"
	// Glass: the writer made a break-glass change (the review's).
	Glass = "glass"
	// Ack: the writer acknowledged a break-glass review.
	Ack = "ack"
	// Set: the writer set the table's policy (its text's hash).
	Set = "set"
)

// Verbs lists each kind's verbs.
var Verbs = map[string][]string{
	KindRequest: {Ask, Approve, Deny, Cancel, Expire},
	KindReview:  {Glass, Ack},
	KindPolicy:  {Set},
}

// Attributes of a proof item (docs/contracts/policy.md).
const (
	AttrBinding  = "binding"
	attrWriter   = "writer"
	attrWriterID = "writer_id"
	attrVerb     = "verb"
	attrSubject  = "subject"
	attrAt       = "at"
	attrFinal    = "final"
	attrNeeded   = "approvals_needed"
	attrComment  = "comment"
)

// ErrMalformed marks an item under [Prefix] that is not a proof koshactl
// can read: it proves nothing.
var ErrMalformed = errors.New("malformed proof")

// Writer is who writes (or wrote) a proof.
type Writer struct {
	// ID is the STS unique id, or [Unverified].
	ID string
	// Name is the caller ARN STS named (or the asserted name).
	Name string
}

// Verified reports whether STS named the writer.
func (w Writer) Verified() bool { return w.ID != Unverified }

// Is reports whether w and o are one principal: the same unique id, or,
// for unverified writers, the same name.
func (w Writer) Is(o Writer) bool { return w.ID == o.ID && w.Name == o.Name }

// Person is the name of the person behind a verified writer: an IAM
// user's name, an assumed-role session's name (which the role's trust
// policy pins to the person: sts:RoleSessionName = ${aws:username}, or
// Identity Center's user name); an unverified writer's asserted name.
func (w Writer) Person() string {
	if !w.Verified() {
		return w.Name
	}
	return w.Name[strings.LastIndexByte(w.Name, '/')+1:]
}

// SamePerson reports whether w and o are one person: one principal
// ([Writer.Is]), or two verified principals of one name (alice's IAM
// user and her sessions in the operator and approver roles: each has a
// unique id of its own), whatever its case (IAM user names are unique
// regardless of case). Two people of one name in two accounts are taken
// for one: an approval needs someone else, never fewer checks.
func (w Writer) SamePerson(o Writer) bool {
	if w.Is(o) {
		return true
	}
	return w.Verified() && o.Verified() && strings.EqualFold(w.Person(), o.Person())
}

// WriterOf is the writer of the proofs id writes. A verified identity
// needs a unique id bound to its ARN ([Bound]): an IAM user or an
// assumed-role session.
func WriterOf(id audit.Identity) (Writer, error) {
	if !id.Verified() {
		if id.Actor == "" {
			return Writer{}, errors.New("no actor to write a proof as")
		}
		return Writer{ID: Unverified, Name: id.Actor}, nil
	}
	switch {
	case id.UserID == "":
		return Writer{}, fmt.Errorf("%s was verified by STS without a unique id: a proof is keyed by it; re-run so STS is asked again", textsafe.Line(id.Actor))
	case strings.ContainsAny(id.Actor, "#%") || strings.ContainsAny(id.UserID, "#%"):
		return Writer{}, fmt.Errorf("%s (unique id %s) holds '#' or '%%', which a proof's key cannot: act as an IAM user or role whose path and name have neither",
			textsafe.Line(id.Actor), textsafe.Line(id.UserID))
	case !Bound(id.UserID, id.Actor):
		return Writer{}, fmt.Errorf("%s (unique id %s) is neither an IAM user nor an assumed-role session, whose proofs IAM can tie to them: act as one",
			textsafe.Line(id.Actor), textsafe.Line(id.UserID))
	}
	return Writer{ID: id.UserID, Name: id.Actor}, nil
}

// RoleIDPrefix starts the unique id of every IAM role (AWS's "unique
// identifier prefixes"): an assumed-role session's aws:userid is
// ROLEID:SESSION with a ROLEID that starts so. A federated user's is
// ACCOUNT:NAME (sts:GetFederationToken, a name its caller picks), which
// IAM lets write a key naming any assumed-role session after its own id:
// only a role's id binds a session name.
const RoleIDPrefix = "AROA"

// Bound reports whether the unique id uid is the principal arn names, as
// far as the two can show it, for the kinds of principal a proof may be
// written by: an IAM user (arn:P:iam::ACCOUNT:user/PATH/NAME, whose unique
// id holds no colon; IAM ties the key to the ARN itself) or an
// assumed-role session (arn:P:sts::ACCOUNT:assumed-role/ROLE/SESSION,
// whose unique id is ROLEID:SESSION, ROLEID a role's: [RoleIDPrefix]).
// Anything else is not bound.
func Bound(uid, arn string) bool {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[4] == "" || uid == "" {
		return false
	}
	res := parts[5]
	switch {
	case parts[2] == "iam" && parts[3] == "" && strings.HasPrefix(res, "user/") && len(res) > len("user/"):
		return !strings.Contains(uid, ":")
	case parts[2] == "sts" && parts[3] == "" && strings.HasPrefix(res, "assumed-role/"):
		role, session, ok := strings.Cut(strings.TrimPrefix(res, "assumed-role/"), "/")
		if !ok || role == "" || session == "" || strings.Contains(session, "/") {
			return false
		}
		roleID, s, ok := strings.Cut(uid, ":")
		return ok && strings.HasPrefix(roleID, RoleIDPrefix) && len(roleID) > len(RoleIDPrefix) && s == session
	}
	return false
}

// Proof is one proof.
type Proof struct {
	Writer Writer
	Verb   string
	// Kind and Subject say what it is about: KindRequest and the request's
	// id, KindReview and the review's id, KindPolicy and the policy's
	// version.
	Kind, Subject string
	// Binding ties the proof to the exact thing it proves: a request's
	// hash and expiry, a policy text's hash, a break-glass change's token.
	Binding string
	At      time.Time
	// Final marks the approval that completed a request's approvals
	// (written in the transaction that applied or approved it).
	Final bool
	// Needed is how many approvals the requester's policy asked for (an
	// ask's).
	Needed int
	// Change is the token of the change that wrote it (its write_id), as
	// read.
	Change string
	// Expires, when set, is when the store may collect it (its ttl).
	Expires time.Time
	// Comment is what the writer said with it (an approval's --comment):
	// theirs alone, as the key is. Render it through textsafe.
	Comment string
}

// escape and unescape write and read a writer's name in a key.
var escape = strings.NewReplacer("%", "%25", "#", "%23")
var unescape = strings.NewReplacer("%23", "#", "%25", "%")

// KeyID is the writer as a key of its own names it: its unique id (what
// IAM's ${aws:userid} is), or for an unverified writer [Unverified], '#'
// and its asserted name (escaped as in [Proof.Key]).
func (w Writer) KeyID() string {
	if !w.Verified() {
		return Unverified + "#" + escape.Replace(w.Name)
	}
	return w.ID
}

// Key is the proof's pk.
func (p Proof) Key() string {
	name := p.Writer.Name
	if !p.Writer.Verified() {
		name = escape.Replace(name)
	}
	return Prefix + p.Writer.ID + "#" + p.Verb + "#" + name + "#" + p.Kind + "#" + p.Subject
}

// Of is the subject a proof of kind and subject names, as stored in its
// subject attribute: "request#3f2a9c1b0d4e".
func Of(kind, subject string) string { return kind + "#" + subject }

// Item is the proof's item, written by the change whose token is token.
func (p Proof) Item(token string) store.Item {
	it := store.Item{
		store.PK:          p.Key(),
		attrWriter:        p.Writer.Name,
		attrVerb:          p.Verb,
		attrSubject:       Of(p.Kind, p.Subject),
		AttrBinding:       p.Binding,
		attrAt:            p.At.UnixMilli(),
		store.WriteIDAttr: token,
	}
	if p.Writer.Verified() {
		it[attrWriterID] = p.Writer.ID
	}
	if p.Final {
		it[attrFinal] = int64(1)
	}
	if p.Needed > 0 {
		it[attrNeeded] = int64(p.Needed)
	}
	if !p.Expires.IsZero() {
		it[store.TTLAttr] = p.Expires.Unix()
	}
	if p.Comment != "" {
		it[attrComment] = p.Comment
	}
	return it
}

// Put is the write of the proof in the change whose token is token: its
// key must be free. A proof is never written twice.
func (p Proof) Put(token string) store.Op { return store.PutOp(p.Item(token), store.IfAbsent()) }

// Check is the check, in a change, that the proof under pk still binds
// binding: the change applies only if it does.
func Check(pk, binding string) store.Op {
	return store.CheckOp(pk, store.IfEquals(AttrBinding, binding))
}

// ParseKey reads what a proof's key says (writer, verb, kind, subject);
// its other fields are left zero. A key that is not a proof's, or whose
// verified writer is not bound to its id, is an error wrapping
// [ErrMalformed].
func ParseKey(pk string) (Proof, error) {
	bad := func(why string) (Proof, error) {
		return Proof{}, fmt.Errorf("%w: %s: %s", ErrMalformed, textsafe.Quote(pk), why)
	}
	rest, ok := strings.CutPrefix(pk, Prefix)
	if !ok {
		return bad("not a proof key (" + Prefix + "...)")
	}
	f := strings.Split(rest, "#")
	if len(f) != 5 || slices.Contains(f, "") {
		return bad("want proof#<writer id>#<verb>#<writer>#<kind>#<subject>")
	}
	p := Proof{Writer: Writer{ID: f[0], Name: f[2]}, Verb: f[1], Kind: f[3], Subject: f[4]}
	if !slices.Contains(Verbs[p.Kind], p.Verb) {
		return bad(fmt.Sprintf("%s is not a verb of a %s proof", textsafe.Quote(p.Verb), textsafe.Quote(p.Kind)))
	}
	if p.Writer.Verified() {
		if !Bound(p.Writer.ID, p.Writer.Name) {
			return bad("its writer's ARN is not the principal its unique id names")
		}
	} else {
		p.Writer.Name = unescape.Replace(p.Writer.Name)
	}
	return p, nil
}

// FromItem decodes a stored proof: its key ([ParseKey]) and attributes,
// which must agree with it.
func FromItem(it store.Item) (Proof, error) {
	p, err := ParseKey(it.PK())
	if err != nil {
		return Proof{}, err
	}
	bad := func(attr string) (Proof, error) {
		return Proof{}, fmt.Errorf("%w: %s: its %s attribute does not follow its key", ErrMalformed, textsafe.Quote(it.PK()), attr)
	}
	if it.Str(attrWriter) != p.Writer.Name {
		return bad(attrWriter)
	}
	if it.Str(attrVerb) != p.Verb {
		return bad(attrVerb)
	}
	if it.Str(attrSubject) != Of(p.Kind, p.Subject) {
		return bad(attrSubject)
	}
	if p.Writer.Verified() && it.Str(attrWriterID) != p.Writer.ID {
		return bad(attrWriterID)
	}
	p.Binding, p.Change, p.Comment = it.Str(AttrBinding), it.WriteID(), it.Str(attrComment)
	if p.Binding == "" {
		return bad(AttrBinding)
	}
	ms, ok := it.Int(attrAt)
	if !ok {
		return bad(attrAt)
	}
	p.At = time.UnixMilli(ms).UTC()
	if v, ok := it.Int(attrFinal); ok {
		p.Final = v == 1
	}
	if n, ok := it.Int(attrNeeded); ok {
		p.Needed = int(n)
	}
	if s, ok := it.Int(store.TTLAttr); ok {
		p.Expires = time.Unix(s, 0).UTC()
	}
	return p, nil
}

// String says the proof in a few words: "ask by arn:…:user/alice".
func (p Proof) String() string {
	s := p.Verb + " by " + p.Writer.Name
	if !p.Writer.Verified() {
		s += " (unverified)"
	}
	return s
}

// Short is a hash as messages show it: its first 12 hex digits.
func Short(h string) string { return h[:min(12, len(h))] }

// FormatMillis writes a time as the whole epoch milliseconds a binding
// holds.
func FormatMillis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
