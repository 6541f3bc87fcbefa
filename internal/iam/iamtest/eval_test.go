package iamtest_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
)

// inTx adds dynamodb:EnclosingOperation to a request's context.
func inTx(ctx map[string][]string, op string) map[string][]string {
	ctx["dynamodb:EnclosingOperation"] = []string{op}
	return ctx
}

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
		{Effect: "Allow", Action: []string{"dynamodb:PutItem"}, Resource: []string{table},
			Condition: map[string]map[string][]string{
				"ForAllValues:StringLike":  {"dynamodb:LeadingKeys": {"audit#*"}},
				"ForAnyValue:StringEquals": {"dynamodb:EnclosingOperation": {"TransactWriteItems"}},
			}},
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
		// ForAnyValue needs a value: an absent enclosing operation (a
		// PutItem sent alone) fails it.
		{iamtest.Request{"dynamodb:PutItem", table, inTx(leading("audit#1"), "TransactWriteItems")}, true},
		{iamtest.Request{"dynamodb:PutItem", table, leading("audit#1")}, false},
		{iamtest.Request{"dynamodb:PutItem", table, inTx(leading("audit#1"), "BatchWriteItem")}, false},
		{iamtest.Request{"dynamodb:PutItem", table, inTx(leading("breaker#openai"), "TransactWriteItems")}, false},
	} {
		if got := iamtest.Allowed(doc, c.r); got != c.want {
			t.Errorf("%s: allowed %v, want %v", c.r, got, c.want)
		}
	}
}

var target = iam.Target{Region: "us-east-1", Account: "123456789012", Table: "kosha-control"}

// transactBody is a TransactWriteItems body putting an item under each pk.
func transactBody(pks ...string) []byte {
	var items []string
	for _, pk := range pks {
		items = append(items, `{"Put":{"TableName":"kosha-control","Item":{"pk":{"S":"`+pk+`"}},"ConditionExpression":"attribute_not_exists(pk)"}}`)
	}
	return []byte(`{"ClientRequestToken":"t1","TransactItems":[` + strings.Join(items, ",") + `]}`)
}

// A transaction is authorized as its actions, each the single-item
// operation with its own key and the enclosing operation: one action the
// policy does not allow denies the whole call, and names that action.
func TestATransactionIsDeniedWholeByOneAction(t *testing.T) {
	reqs, err := iamtest.DynamoDBRequests(target, "TransactWriteItems", []byte(`{"TransactItems":[
		{"Put":{"TableName":"kosha-control","Item":{"pk":{"S":"audit#dp#1#a"},"ttl":{"N":"1"}},
			"ConditionExpression":"attribute_not_exists(#pk) OR (#w = :w AND size(#m.#k[0]) > :n)","ExpressionAttributeNames":{"#pk":"pk","#w":"write_id","#m":"map","#k":"key"}}},
		{"Delete":{"TableName":"kosha-control","Key":{"pk":{"S":"breaker#openai"}}}},
		{"Update":{"TableName":"kosha-control","Key":{"pk":{"S":"rl#agent-1"}}}},
		{"ConditionCheck":{"TableName":"kosha-control","Key":{"pk":{"S":"audit#2#b"}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.String())
	}
	table := target.TableARN()
	want := []string{
		"dynamodb:PutItem on " + table + " dynamodb:Attributes=[map pk ttl write_id] dynamodb:EnclosingOperation=[TransactWriteItems] dynamodb:LeadingKeys=[audit#dp#1#a]",
		"dynamodb:DeleteItem on " + table + " dynamodb:Attributes=[pk] dynamodb:EnclosingOperation=[TransactWriteItems] dynamodb:LeadingKeys=[breaker#openai]",
		"dynamodb:UpdateItem on " + table + " dynamodb:Attributes=[pk] dynamodb:EnclosingOperation=[TransactWriteItems] dynamodb:LeadingKeys=[rl#agent-1]",
		"dynamodb:ConditionCheckItem on " + table + " dynamodb:Attributes=[pk] dynamodb:EnclosingOperation=[TransactWriteItems] dynamodb:LeadingKeys=[audit#2#b]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, c := range []struct {
		role   iam.Role
		op     string
		body   []byte
		denied string // the action denied, "" for none
	}{
		// The data plane writes its own records only.
		{iam.DataPlane, "TransactWriteItems", transactBody("audit#dp#1#a"), ""},
		{iam.DataPlane, "TransactWriteItems", transactBody("audit#dp#1#a", "audit#1#b"), "dynamodb:PutItem"},
		{iam.DataPlane, "TransactWriteItems", transactBody("audit#1#b"), "dynamodb:PutItem"},
		// The operator writes records and levers in transactions, never
		// alone; the reader writes nothing.
		{iam.Operator, "TransactWriteItems", transactBody("breaker#openai", "audit#1#b"), ""},
		{iam.Operator, "TransactWriteItems", transactBody("breaker#openai", "audit#1#b", "other#x"), "dynamodb:PutItem"},
		{iam.Operator, "PutItem", []byte(`{"TableName":"kosha-control","Item":{"pk":{"S":"audit#1#b"}}}`), "dynamodb:PutItem"},
		{iam.Operator, "DeleteItem", []byte(`{"TableName":"kosha-control","Key":{"pk":{"S":"breaker#openai"}}}`), "dynamodb:DeleteItem"},
		{iam.Reader, "TransactWriteItems", transactBody("breaker#openai", "audit#1#b"), "dynamodb:PutItem"},
		// The admin's backfill writes alone, outside transactions: a grant
		// without the condition covers both.
		{iam.Admin, "PutItem", []byte(`{"TableName":"kosha-control","Item":{"pk":{"S":"audit#1#b"}}}`), ""},
		{iam.Admin, "TransactWriteItems", transactBody("audit#1#b"), ""},
		{iam.Admin, "TransactWriteItems", transactBody("rl#agent-1"), "dynamodb:PutItem"},
	} {
		doc, err := iam.Policy(c.role, target)
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := iamtest.DynamoDBRequests(target, c.op, c.body)
		if err != nil {
			t.Fatal(err)
		}
		e := iamtest.NewEnforcer("test")
		e.SetPolicy(&doc)
		msg := e.Authorize(reqs...)
		d := e.TakeDenials()
		switch {
		case c.denied == "" && msg != "":
			t.Errorf("%s %s %s: denied %v", c.role, c.op, c.body, d)
		case c.denied != "" && (msg == "" || len(d) != 1 || d[0].Action != c.denied || !strings.Contains(msg, c.denied)):
			t.Errorf("%s %s %s: %q, denied %v; want %s denied", c.role, c.op, c.body, msg, d, c.denied)
		}
	}
}
