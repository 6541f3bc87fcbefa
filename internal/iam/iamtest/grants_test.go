package iamtest_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
)

func TestGrantsRefusesWildcards(t *testing.T) {
	for _, s := range []iam.Statement{
		{Sid: "A", Effect: "Allow", Action: []string{"dynamodb:*"}},
		{Sid: "B", Effect: "Deny", Action: []string{"dynamodb:GetItem"}},
		{Sid: "C", Effect: "Allow", Action: []string{"dynamodb:GetItem"},
			Condition: map[string]map[string][]string{iam.LeadingKeysCondition: {"dynamodb:LeadingKeys": {"*"}}}},
	} {
		if _, err := iamtest.Grants(iam.Document{Statement: []iam.Statement{s}}, iam.Target{}); err == nil {
			t.Errorf("statement %s accepted", s.Sid)
		}
	}
}
