package storetest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Attr is one attribute as a hand edit with the AWS CLI writes it: its
// DynamoDB type ("S", or "N" for a number) and its text, which need not be
// anything koshactl would write.
type Attr struct{ Type, Text string }

// RawItem is attrs as the store API carries them: strings as they are,
// numbers parsed as the backends parse them (store.ParseNumber).
func RawItem(tb testing.TB, attrs map[string]Attr) store.Item {
	tb.Helper()
	it := store.Item{}
	for k, v := range attrs {
		if v.Type == "S" {
			it[k] = v.Text
			continue
		}
		n, err := store.ParseNumber(v.Text)
		if err != nil {
			tb.Fatal(err)
		}
		it[k] = n
	}
	return it
}

// PutRaw writes attrs to s unconditionally, past every codec of koshactl's
// domain packages.
func PutRaw(tb testing.TB, s store.Store, attrs map[string]Attr) {
	tb.Helper()
	if err := s.Put(context.Background(), RawItem(tb, attrs), store.Always()); err != nil {
		tb.Fatal(err)
	}
}

// PutRawDynamoDB writes attrs to table with PutItem, past the store too: the
// item exactly as a hand edit leaves it.
func PutRawDynamoDB(tb testing.TB, client *dynamodb.Client, table string, attrs map[string]Attr) {
	tb.Helper()
	av := map[string]types.AttributeValue{}
	for k, v := range attrs {
		if v.Type == "S" {
			av[k] = &types.AttributeValueMemberS{Value: v.Text}
		} else {
			av[k] = &types.AttributeValueMemberN{Value: v.Text}
		}
	}
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: av}); err != nil {
		tb.Fatal(err)
	}
}
