package iamtest_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Through the proxy on moto: a transaction with one item outside the
// policy is answered AccessDenied and writes none of its items; one the
// policy allows writes all of them; an answer the proxy loses was applied.
func TestProxyDeniesATransactionWholeAndLosesAnswers(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	direct := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	if _, err := direct.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String("kosha-control"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	enf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/kosha-gateway/task")
	p := iamtest.NewProxy(t, endpoint, "", "", target, enf)
	client := dynamodb.NewFromConfig(moto.Config(t, p.URL))
	dp, err := iam.Policy(iam.DataPlane, target)
	if err != nil {
		t.Fatal(err)
	}
	enf.SetPolicy(&dp)
	put := func(pks ...string) error {
		var items []types.TransactWriteItem
		for _, pk := range pks {
			items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String("kosha-control"),
				Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}}})
		}
		_, err := client.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}
	exists := func(pk string) bool {
		out, err := direct.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String("kosha-control"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item != nil
	}

	// The data plane's own record with an operator record: denied whole.
	err = put("audit#dp#1#a", "audit#1#forged")
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("a transaction with an operator record, as the data plane: %v, want AccessDeniedException", err)
	}
	if d := enf.TakeDenials(); len(d) != 1 || d[0].Action != iam.PutItem || d[0].Context["dynamodb:LeadingKeys"][0] != "audit#1#forged" {
		t.Errorf("denied %v, want the PutItem of audit#1#forged", d)
	}
	if exists("audit#dp#1#a") || exists("audit#1#forged") {
		t.Error("a denied transaction wrote an item")
	}
	// Its own record alone: allowed, written.
	if err := put("audit#dp#1#a"); err != nil {
		t.Fatalf("the data plane's own record: %v", err)
	}
	if !exists("audit#dp#1#a") {
		t.Error("an allowed transaction wrote nothing")
	}

	// A lost answer: the client hears nothing, moto applied it.
	p.LoseAnswers(func(op string, _ []byte) bool { return op == "TransactWriteItems" })
	if err := put("audit#dp#2#b"); err == nil {
		t.Fatal("a lost answer came back")
	}
	p.LoseAnswers(nil)
	if !exists("audit#dp#2#b") || p.Lost() != 1 {
		t.Errorf("after a lost answer: applied %v, %d lost; want applied, 1", exists("audit#dp#2#b"), p.Lost())
	}
}
