package iam_test

import (
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/proof"
)

// What a reader may do, the requester and the operator may too: their
// written-out path lists begin with the reader's.
func TestRolesExtendTheReader(t *testing.T) {
	reader := iam.RolePaths[iam.Reader]
	for _, r := range []iam.Role{iam.Requester, iam.Operator, iam.Approver} {
		if p := iam.RolePaths[r]; len(p) < len(reader) || !slices.Equal(p[:len(reader)], reader) {
			t.Errorf("%s's paths %v do not begin with the reader's %v", r, p, reader)
		}
	}
}

// The verbs the policies grant are the proof package's: a verb koshactl
// writes and no role may, or a grant of a verb nothing writes, is caught.
func TestProofVerbsAreTheProofPackages(t *testing.T) {
	var want []string
	for _, vs := range proof.Verbs {
		want = append(want, vs...)
	}
	got := []string{iam.VerbAsk, iam.VerbApprove, iam.VerbDeny, iam.VerbCancel, iam.VerbExpire, iam.VerbGlass, iam.VerbAck, iam.VerbSet}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("iam's proof verbs %v, proof's %v", got, want)
	}
	if iam.OwnProofs != proof.Prefix+iam.UserIDVariable+"#" {
		t.Errorf("own proofs start %q, proofs %q", iam.OwnProofs, proof.Prefix)
	}
}
