package iamtest_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
)

func TestAllowed(t *testing.T) {
	table := "arn:aws:dynamodb:eu-west-1:123456789012:table/t"
	leading := func(pks ...string) map[string][]string { return map[string][]string{"dynamodb:LeadingKeys": pks} }
	doc := iam.Document{Statement: []iam.Statement{
		{Effect: "Allow", Action: []string{"dynamodb:Get*", "dynamodb:BatchGetItem"}, Resource: []string{"arn:aws:dynamodb:*:123456789012:table/?"},
			Condition: map[string]map[string][]string{"ForAllValues:StringLike": {"dynamodb:LeadingKeys": {"breaker#*"}}}},
		{Effect: "Allow", Action: []string{"kms:Decrypt"}, Resource: []string{"*"},
			Condition: map[string]map[string][]string{"StringEquals": {"kms:ViaService": {"secretsmanager.eu-west-1.amazonaws.com"}}}},
		{Effect: "Deny", Action: []string{"dynamodb:getitem"}, Resource: []string{table},
			Condition: map[string]map[string][]string{"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": {"breaker#secret"}}}},
		{Effect: "Allow", Action: []string{"dynamodb:Scan"}, Resource: []string{table},
			Condition: map[string]map[string][]string{"NumericLessThan": {"x": {"1"}}}},
	}}
	for _, c := range []struct {
		r    iamtest.Request
		want bool
	}{
		{iamtest.Request{"dynamodb:GetItem", table, leading("breaker#openai")}, true},
		{iamtest.Request{"dynamodb:GetItem", table, leading("audit#1")}, false},
		{iamtest.Request{"dynamodb:GetItem", table + "x", leading("breaker#openai")}, false},
		// Every key of a batch must match.
		{iamtest.Request{"dynamodb:BatchGetItem", table, leading("breaker#a", "breaker#b")}, true},
		{iamtest.Request{"dynamodb:BatchGetItem", table, leading("breaker#a", "rl#b")}, false},
		// ForAllValues holds with no key at all.
		{iamtest.Request{"dynamodb:GetItem", table, nil}, true},
		// An explicit Deny wins (actions are case-insensitive).
		{iamtest.Request{"dynamodb:GetItem", table, leading("breaker#secret")}, false},
		{iamtest.Request{"kms:Decrypt", "arn:aws:kms:eu-west-1:123456789012:key/k", map[string][]string{"kms:ViaService": {"secretsmanager.eu-west-1.amazonaws.com"}}}, true},
		// A single-valued condition on an absent key fails.
		{iamtest.Request{"kms:Decrypt", "arn:aws:kms:eu-west-1:123456789012:key/k", nil}, false},
		// An operator the evaluator does not know matches nothing.
		{iamtest.Request{"dynamodb:Scan", table, nil}, false},
		{iamtest.Request{"dynamodb:PutItem", table, leading("breaker#openai")}, false},
	} {
		if got := iamtest.Allowed(doc, c.r); got != c.want {
			t.Errorf("%s: allowed %v, want %v", c.r, got, c.want)
		}
	}
}
