// Command sdkforceopen is the bare-SDK peer of the force-open whole-process
// benchmark: a Go program making the DynamoDB calls `koshactl breaker
// force-open DEP --overwrite` makes, with nothing else: one consistent
// BatchGetItem of the override, then one TransactWriteItems holding the
// conditional put of the new override and the conditional put of its audit
// record. What koshactl costs beyond it is its own start-up, config and
// rules.
//
// Usage: sdkforceopen ENDPOINT TABLE DEPENDENCY
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: sdkforceopen ENDPOINT TABLE DEPENDENCY")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "sdkforceopen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, endpoint, table, dep string) error {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"), config.WithBaseEndpoint(endpoint),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("bench", "bench", "")))
	if err != nil {
		return err
	}
	db := dynamodb.NewFromConfig(cfg)
	pk := "breaker#" + dep
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
	got, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: []map[string]types.AttributeValue{key}, ConsistentRead: aws.Bool(true)},
	}})
	if err != nil {
		return err
	}
	version := 0
	cond := "attribute_not_exists(pk)"
	values := map[string]types.AttributeValue{}
	if items := got.Responses[table]; len(items) == 1 {
		if v, ok := items[0]["version"].(*types.AttributeValueMemberN); ok {
			version, _ = strconv.Atoi(v.Value)
			cond = "version = :v"
			values[":v"] = v
		}
	}
	now := time.Now()
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	expires := now.Add(30 * time.Minute)
	override := &types.Put{TableName: &table, ConditionExpression: &cond,
		Item: map[string]types.AttributeValue{
			"pk": s(pk), "state": s("forced_open"), "reason": s("bench"), "actor": s("bench@host"),
			"created_at": n(now.UnixMilli()), "expires_at": n(expires.UnixMilli()), "ttl": n(expires.Unix()),
			"version": n(int64(version + 1)),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if len(values) > 0 {
		override.ExpressionAttributeValues = values
	}
	auditCond := "attribute_not_exists(pk)"
	auditPK := "audit#" + now.UTC().Format("2006-01-02") + "#" + strconv.FormatInt(now.UnixNano(), 10)
	record := &types.Put{TableName: &table, ConditionExpression: &auditCond,
		Item: map[string]types.AttributeValue{
			"pk": s(auditPK), "action": s("breaker.force_open"), "target": s(pk), "actor": s("bench@host"),
			"reason": s("bench"), "at": n(now.UnixMilli()), "version": n(int64(version + 1)),
		},
	}
	token := strconv.FormatInt(now.UnixNano(), 16)
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: &token,
		TransactItems: []types.TransactWriteItem{{Put: override}, {Put: record}}}); err != nil {
		return err
	}
	fmt.Printf("forced open %s\n", dep)
	return nil
}
