package iamtest_test

import (
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
)

// A request's closed marker is what keeps a denied request denied (an
// approval checks it absent), and no role may delete it. DynamoDB's TTL
// deletes any item whose ttl has passed: a marker Put with a ttl in the
// past (the requester role, the MCP server's, may write closed# to cancel)
// would be deleted for it, and the denied request, set back to pending,
// approved. Every role that writes markers writes them as koshactl does,
// with no other attribute.
func TestNoRoleDatesAClosedMarker(t *testing.T) {
	marker := func(extra string) []byte {
		return []byte(`{"TransactItems":[{"Put":{"TableName":"kosha-control","Item":{"pk":{"S":"closed#3f2a9c1b0d4e"},"verb":{"S":"cancel"},` +
			`"write_id":{"S":"tok"}` + extra + `},"ConditionExpression":"attribute_not_exists(#pk)","ExpressionAttributeNames":{"#pk":"pk"}}}]}`)
	}
	check := []byte(`{"TransactItems":[{"ConditionCheck":{"TableName":"kosha-control","Key":{"pk":{"S":"closed#3f2a9c1b0d4e"}},` +
		`"ConditionExpression":"attribute_not_exists(#pk)","ExpressionAttributeNames":{"#pk":"pk"}}}]}`)
	writers := 0
	for _, role := range iam.Roles {
		doc, err := iam.Policy(role, target)
		if err != nil {
			t.Fatal(err)
		}
		e := iamtest.NewEnforcer(string(role))
		e.SetPolicy(&doc)
		allowed := func(body []byte) bool {
			reqs, err := iamtest.DynamoDBRequests(target, "TransactWriteItems", body)
			if err != nil {
				t.Fatal(err)
			}
			return e.Authorize(reqs...) == ""
		}
		if !allowed(marker("")) {
			continue
		}
		writers++
		for _, extra := range []string{`,"ttl":{"N":"1"}`, `,"expires":{"N":"1"}`} {
			if allowed(marker(extra)) {
				t.Errorf("%s may write a closed marker with %s", role, extra[1:])
			}
		}
		if checks := slices.Contains(role.Needs(), iam.Need{Action: iam.ConditionCheckItem, Prefix: iam.ClosedItems, Transaction: true}); allowed(check) != checks {
			t.Errorf("%s may check a marker absent: %v, want %v", role, !checks, checks)
		}
	}
	if writers == 0 {
		t.Error("no role writes closed markers")
	}
}
