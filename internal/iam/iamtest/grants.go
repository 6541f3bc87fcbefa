package iamtest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/iam"
)

// Grants reads doc back as the needs it allows on t: each item action once
// per LeadingKeys prefix (a need in a transaction when the statement also
// requires dynamodb:EnclosingOperation TransactWriteItems), scans, queries,
// table, secret, KMS and metric actions without one. It is how tests check
// a policy grants exactly what a role needs.
func Grants(doc iam.Document, t iam.Target) ([]iam.Need, error) {
	var out []iam.Need
	for _, s := range doc.Statement {
		if s.Effect != "Allow" {
			return nil, fmt.Errorf("statement %s: effect %q", s.Sid, s.Effect)
		}
		prefixes := []string{""}
		if c, ok := s.Condition[iam.LeadingKeysCondition]; ok {
			prefixes = nil
			for _, p := range c["dynamodb:LeadingKeys"] {
				if own, ok := ownProofPrefix(p); ok {
					prefixes = appendNew(prefixes, own)
					continue
				}
				prefix, ok := strings.CutSuffix(p, "*")
				if !ok || prefix == "" || strings.ContainsAny(prefix, "*?") {
					return nil, fmt.Errorf("statement %s: leading key pattern %q is not PREFIX*", s.Sid, p)
				}
				prefixes = append(prefixes, prefix)
			}
		}
		tx := false
		if c, ok := s.Condition[iam.EnclosingOperationCondition]; ok {
			if ops := c["dynamodb:EnclosingOperation"]; len(c) != 1 || len(ops) != 1 || ops[0] != iam.TransactWriteItems {
				return nil, fmt.Errorf("statement %s: enclosing operation condition %v is not %s", s.Sid, c, iam.TransactWriteItems)
			}
			tx = true
		}
		for _, a := range s.Action {
			if strings.ContainsAny(a, "*?") {
				return nil, fmt.Errorf("statement %s: wildcard action %q", s.Sid, a)
			}
			for _, p := range prefixes {
				out = appendNew(out, iam.Need{Action: a, Prefix: p, Transaction: tx})
			}
		}
	}
	return out, nil
}

// ownProofPrefix reads a pattern of [iam.OwnProofPatterns] back as the
// prefix it grants (iam.OwnProofs + verb + "#"); ok is false for any other
// pattern.
func ownProofPrefix(pattern string) (string, bool) {
	rest, ok := strings.CutPrefix(pattern, iam.OwnProofs)
	if !ok {
		return "", false
	}
	verb, _, _ := strings.Cut(rest, "#")
	if verb == "" || strings.ContainsAny(verb, "*?$") || !slices.Contains(iam.OwnProofPatterns(verb), pattern) {
		return "", false
	}
	return iam.OwnProofs + verb + "#", true
}

// appendNew appends v to s unless s holds it already.
func appendNew[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// WritePrefixOf is the item prefix a write of pk is granted on: a proof's
// writer's own ([iam.OwnProofs] and its verb), a proposer's own
// ([iam.OwnProposals]), else [PrefixOf]'s.
func WritePrefixOf(pk string) string {
	if rest, ok := strings.CutPrefix(pk, iam.ProofItems); ok {
		if f := strings.SplitN(rest, "#", 3); len(f) == 3 {
			return iam.OwnProofs + f[1] + "#"
		}
	}
	if strings.HasPrefix(pk, iam.ProposalItems) {
		return iam.OwnProposals
	}
	return PrefixOf(pk)
}

// Prefixes lists the item prefixes, the most specific first:
// [PrefixOf] takes the first that starts a key.
var Prefixes = []string{iam.DataPlaneItems, iam.AskingItems, iam.AuditItems, iam.BreakerItems, iam.BucketItems, iam.PolicyItems, iam.FreezeItems}

// PrefixOf is the item prefix of pk: the first of [Prefixes] it starts
// with, else pk up to its first '#' (pk itself when it has none).
func PrefixOf(pk string) string {
	for _, p := range Prefixes {
		if strings.HasPrefix(pk, p) {
			return p
		}
	}
	if i := strings.IndexByte(pk, '#'); i >= 0 {
		return pk[:i+1]
	}
	return pk
}
