package policy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// The policy in force is the text whose hash the newest policy.set proof
// names: the policy item is written by the admin role alone, and with it,
// in the same transaction, the admin's proof (internal/proof), keyed by
// their unique id and naming the text's hash and the version. An item
// whose text is not what its proof names (a direct Put), that names no
// proof (written by hand, or by a koshactl older than proofs), or a table
// without the item while policy.set proofs exist (a deleted policy) is not
// the policy in force: changes that need approval are refused on it, and
// `audit list --unapproved` flags it.

// ErrUnproven refuses a change that needs approval on a table whose
// policy item is not proven by its policy.set proof (exit 14).
var ErrUnproven = exitcode.New(exitcode.Mismatch, "the table's policy is not proven by its policy.set proof")

// unproven is the refusal of s, with why.
func unproven(s *Stored, why string) error {
	return fmt.Errorf("%w: %s (version %d) %s: nothing that needs approval is decided on it until an admin sets the policy again with koshactl policy set FILE",
		ErrUnproven, Key, s.Version, why)
}

// proofSubject is the subject of the policy.set proof of version,
// written by the change whose token is token: "<version>.<token's first
// 12>", one of its own for each set (a version set again after the item
// was deleted is another proof).
func proofSubject(version int64, token string) string {
	if len(token) > 12 {
		token = token[:12]
	}
	return strconv.FormatInt(version, 10) + "." + token
}

// versionOf is the version a policy.set proof's subject names.
func versionOf(subject string) (int64, bool) {
	v, _, ok := strings.Cut(subject, ".")
	n, err := strconv.ParseInt(v, 10, 64)
	return n, ok && err == nil
}

// proofKey checks that the proof s names is a policy.set proof of its
// version, and returns its key.
func (s *Stored) proofKey() (string, error) {
	if s.Proof == "" {
		return "", unproven(s, "names no policy.set proof (set by hand, or before koshactl kept proofs)")
	}
	p, err := proof.ParseKey(s.Proof)
	v, ok := versionOf(p.Subject)
	if err != nil || p.Kind != proof.KindPolicy || p.Verb != proof.Set || !ok || v != s.Version {
		return "", unproven(s, "names "+textsafe.Quote(s.Proof)+", which is not the policy.set proof of its version")
	}
	return s.Proof, nil
}

// Check is the check, in a change that relies on s (an approval), that
// s's proof names its text: the change applies only if it does. An item
// naming no such proof is refused ([ErrUnproven]).
func (s *Stored) Check() (store.Op, error) {
	pk, err := s.proofKey()
	if err != nil {
		return store.Op{}, err
	}
	return proof.Check(pk, s.SHA256), nil
}

// ProofKey is the key of the proof s names, for a batch read of it; ""
// when s names none ([Stored.Verify] then refuses it).
func (s *Stored) ProofKey() string {
	pk, _ := s.proofKey()
	return pk
}

// Verify checks s against its proof as read (it; nil when absent): the
// proof must name s's text ([ErrUnproven] otherwise).
func (s *Stored) Verify(it store.Item) error {
	if _, err := s.proofKey(); err != nil {
		return err
	}
	if it == nil {
		return unproven(s, "names a policy.set proof that does not exist")
	}
	p, err := proof.FromItem(it)
	if err != nil {
		return unproven(s, "names a proof that cannot be read ("+textsafe.Line(err.Error())+")")
	}
	if p.Binding != s.SHA256 {
		return unproven(s, fmt.Sprintf("holds a text hashing to %s, and its proof by %s names %s: the text was written without koshactl policy set",
			s.SHA256[:12], textsafe.Line(p.Writer.Name), textsafe.Line(p.Binding)))
	}
	return nil
}

// Standing is the table's policy against its policy.set proofs.
type Standing struct {
	// Stored is the policy item (nil: none).
	Stored *Stored
	// Newest is the newest policy.set proof (nil: none).
	Newest *proof.Proof
	// Problem says why the item is not the policy in force ("" when it
	// is, or when the table has neither item nor proof).
	Problem string
	// Since is when the table first had a policy: the item's since, or,
	// when the item is gone, the oldest policy.set proof's time.
	Since time.Time
}

// Scanner reads items by prefix (a scan of the table).
type Scanner interface {
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
}

// Standing reads the policy item and every policy.set proof (a scan of the
// proofs, made with the item's read) and says whether the item is the
// policy in force: what `audit list --unapproved` flags. An item koshactl
// cannot parse is a problem too.
func (p *Policies) Standing(ctx context.Context, sc Scanner) (Standing, error) {
	type read struct {
		it  store.Item
		err error
	}
	got := make(chan read, 1)
	go func() {
		it, err := p.store.Get(ctx, Key)
		got <- read{it, err}
	}()
	var st Standing
	var oldest time.Time
	for it, err := range sc.Scan(ctx, store.ScanQuery{Prefix: proof.Prefix}) {
		if err != nil {
			<-got
			return Standing{}, fmt.Errorf("read the policy.set proofs: %w", err)
		}
		pf, err := proof.FromItem(it)
		if err != nil || pf.Kind != proof.KindPolicy {
			continue
		}
		v, ok := versionOf(pf.Subject)
		if !ok {
			continue
		}
		if oldest.IsZero() || pf.At.Before(oldest) {
			oldest = pf.At
		}
		// The newest is the latest set: by time, then by version (a policy
		// set again after its item was deleted starts its versions anew).
		if st.Newest == nil {
			st.Newest = &pf
			continue
		}
		nv, _ := versionOf(st.Newest.Subject)
		if pf.At.After(st.Newest.At) || pf.At.Equal(st.Newest.At) && v > nv {
			st.Newest = &pf
		}
	}
	r := <-got
	switch {
	case errors.Is(r.err, store.ErrNotFound):
		if st.Newest != nil {
			st.Since = oldest
			v, _ := versionOf(st.Newest.Subject)
			st.Problem = fmt.Sprintf("the table has no policy item, and %s set version %d (sha256 %s) at %s: the policy was deleted without koshactl",
				textsafe.Line(st.Newest.Writer.Name), v, textsafe.Line(proof.Short(st.Newest.Binding)), st.Newest.At.Format(time.RFC3339))
		}
		return st, nil
	case r.err != nil:
		return Standing{}, fmt.Errorf("read the table's policy: %w", r.err)
	}
	st.Since = SinceOf(r.it)
	stored, err := FromItem(p.schema, r.it)
	if err != nil {
		st.Problem = textsafe.Line(err.Error())
		return st, nil
	}
	st.Stored = stored
	if _, err := stored.proofKey(); err != nil {
		st.Problem = textsafe.Line(err.Error())
		return st, nil
	}
	if st.Newest == nil || st.Newest.Key() != stored.Proof {
		named, _ := proof.ParseKey(stored.Proof)
		switch {
		case st.Newest == nil:
			st.Problem = textsafe.Line(unproven(stored, "names a policy.set proof that does not exist").Error())
		case st.Newest.Subject != named.Subject || !st.Newest.Writer.Is(named.Writer):
			v, _ := versionOf(st.Newest.Subject)
			st.Problem = fmt.Sprintf("%s holds version %d, and %s set version %d (sha256 %s) at %s: the item was put back without koshactl policy set",
				Key, stored.Version, textsafe.Line(st.Newest.Writer.Name), v, textsafe.Line(proof.Short(st.Newest.Binding)),
				st.Newest.At.Format(time.RFC3339))
		}
		if st.Problem != "" {
			return st, nil
		}
	}
	if st.Newest.Binding != stored.SHA256 {
		st.Problem = textsafe.Line(unproven(stored, fmt.Sprintf("holds a text hashing to %s, and its proof by %s names %s: the text was written without koshactl policy set",
			stored.SHA256[:12], st.Newest.Writer.Name, proof.Short(st.Newest.Binding))).Error())
	}
	return st, nil
}

// proven reads s's proof and verifies s against it.
func (p *Policies) proven(ctx context.Context, s *Stored) error {
	pk, err := s.proofKey()
	if err != nil {
		return err
	}
	it, err := p.store.Get(ctx, pk)
	if errors.Is(err, store.ErrNotFound) {
		return s.Verify(nil)
	}
	if err != nil {
		return fmt.Errorf("read the table's policy.set proof: %w", err)
	}
	return s.Verify(it)
}
