package iam_test

import (
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
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
