// Package dynamotest provides DynamoDB stores for tests: each on a fresh,
// initialized table of a moto server, so tests of packages built on the
// store (rate limiting, breaker overrides, chaos) can run against the real
// DynamoDB API without sharing state.
package dynamotest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

var (
	tables  atomic.Int64
	invalid = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)
)

// TableName returns a table name unique within the test binary, derived from
// the test's name.
func TableName(tb testing.TB) string {
	name := invalid.ReplaceAllString(tb.Name(), "-")
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	return fmt.Sprintf("t%d-%s", tables.Add(1), name)
}

// NewStore returns a store on a fresh table of the moto server at endpoint
// (start one with moto.Start or moto.StartMain), created with
// [dynamo.Store.Init].
func NewStore(tb testing.TB, endpoint string) *dynamo.Store {
	tb.Helper()
	s := dynamo.NewFromConfig(moto.Config(tb, endpoint), TableName(tb))
	if _, err := s.Init(context.Background()); err != nil {
		tb.Fatalf("init table for %s: %v", tb.Name(), err)
	}
	return s
}

// NewStoreWithIndexes returns a store on a fresh table created with only
// the first n indexes of store.Indexes, as an earlier `store init` created
// it (n = 4: before the lists index): the table the readers' fallbacks and
// `store migrate` are tested on.
func NewStoreWithIndexes(tb testing.TB, endpoint string, n int) *dynamo.Store {
	tb.Helper()
	cfg := moto.Config(tb, endpoint)
	in := dynamo.TableDefinition(TableName(tb))
	in.GlobalSecondaryIndexes = in.GlobalSecondaryIndexes[:n]
	used := map[string]bool{"pk": true}
	for _, g := range in.GlobalSecondaryIndexes {
		for _, k := range g.KeySchema {
			used[aws.ToString(k.AttributeName)] = true
		}
	}
	var attrs []types.AttributeDefinition
	for _, a := range in.AttributeDefinitions {
		if used[aws.ToString(a.AttributeName)] {
			attrs = append(attrs, a)
		}
	}
	in.AttributeDefinitions = attrs
	if len(in.GlobalSecondaryIndexes) == 0 {
		in.GlobalSecondaryIndexes = nil
	}
	if _, err := dynamodb.NewFromConfig(cfg).CreateTable(context.Background(), in); err != nil {
		tb.Fatalf("create a table with %d indexes for %s: %v", n, tb.Name(), err)
	}
	s := dynamo.NewFromConfig(cfg, aws.ToString(in.TableName))
	if _, err := s.Init(context.Background()); err != nil {
		tb.Fatalf("init the table with %d indexes for %s: %v", n, tb.Name(), err)
	}
	return s
}

// NewLegacyStore returns a store on a fresh table created as `store init`
// created it before the table had secondary indexes (single string hash key
// pk, on-demand): the table `store migrate` and the readers' scan fallback
// are tested on.
func NewLegacyStore(tb testing.TB, endpoint string) *dynamo.Store {
	tb.Helper()
	cfg := moto.Config(tb, endpoint)
	name := TableName(tb)
	_, err := dynamodb.NewFromConfig(cfg).CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		tb.Fatalf("create legacy table for %s: %v", tb.Name(), err)
	}
	s := dynamo.NewFromConfig(cfg, name)
	if _, err := s.Init(context.Background()); err != nil {
		tb.Fatalf("init legacy table for %s: %v", tb.Name(), err)
	}
	return s
}

// PutBatch loads items into table unconditionally with BatchWriteItem (25
// items a request, 8 writers at once), as benchmarks and fixtures fill a
// big table; operator changes go through the store's conditional writes.
func PutBatch(tb testing.TB, cfg aws.Config, table string, items []store.Item) {
	tb.Helper()
	client := dynamodb.NewFromConfig(cfg)
	var reqs []types.WriteRequest
	for _, it := range items {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: storetest.AttributeValues(tb, it)}})
	}
	chunks := slices.Collect(slices.Chunk(reqs, 25))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, chunk := range chunks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			req := map[string][]types.WriteRequest{table: chunk}
			for attempt := 1; len(req[table]) > 0; attempt++ {
				if attempt > 8 {
					errs[i] = fmt.Errorf("%d items still unprocessed after 8 requests", len(req[table]))
					return
				}
				out, err := client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: req})
				if err != nil {
					errs[i] = err
					return
				}
				req = out.UnprocessedItems
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("load %d items into %s: %v", len(items), table, err)
	}
}
