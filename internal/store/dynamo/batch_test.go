package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// unprocessedAPI forwards to moto, but answers the first `times`
// BatchGetItem requests with their last `hold` keys left unprocessed, as
// DynamoDB does when a request hits a throttled partition or 16 MB.
type unprocessedAPI struct {
	dynamo.API
	mu       sync.Mutex
	times    int
	hold     int
	requests [][]string
}

func (u *unprocessedAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	u.mu.Lock()
	var table string
	var ka types.KeysAndAttributes
	for table, ka = range in.RequestItems {
	}
	var keys []string
	for _, k := range ka.Keys {
		keys = append(keys, k["pk"].(*types.AttributeValueMemberS).Value)
	}
	u.requests = append(u.requests, keys)
	hold := 0
	if u.times > 0 {
		u.times--
		hold = min(u.hold, len(ka.Keys))
	}
	u.mu.Unlock()
	if !*ka.ConsistentRead {
		return nil, errors.New("batch get without consistent reads")
	}
	served := ka
	served.Keys = ka.Keys[:len(ka.Keys)-hold]
	out := &dynamodb.BatchGetItemOutput{}
	if len(served.Keys) > 0 {
		var err error
		out, err = u.API.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: served}}, opts...)
		if err != nil || hold == 0 {
			return out, err
		}
	}
	out.UnprocessedKeys = map[string]types.KeysAndAttributes{table: {Keys: ka.Keys[len(ka.Keys)-hold:]}}
	return out, nil
}

func TestBatchGetRetriesUnprocessedKeys(t *testing.T) {
	t.Parallel()
	base := dynamotest.NewStore(t, endpoint)
	var keys []string
	for i := range 150 {
		pk := fmt.Sprintf("k#%03d", i)
		keys = append(keys, pk)
		if err := base.Put(t.Context(), store.Item{store.PK: pk, "i": int64(i)}, store.Always()); err != nil {
			t.Fatal(err)
		}
	}
	api := &unprocessedAPI{API: dynamodb.NewFromConfig(moto.Config(t, endpoint)), times: 3, hold: 7}
	s := dynamo.New(api, base.Table())
	var (
		waitMu sync.Mutex
		waits  []time.Duration
	)
	s.SetSleep(func(_ context.Context, d time.Duration) error {
		waitMu.Lock()
		defer waitMu.Unlock()
		waits = append(waits, d)
		return nil
	})
	got, err := s.BatchGet(t.Context(), keys)
	if err != nil {
		t.Fatalf("BatchGet: %v", err)
	}
	if len(got) != len(keys) {
		t.Fatalf("BatchGet returned %d items, want %d", len(got), len(keys))
	}
	for _, r := range api.requests {
		if len(r) > store.MaxBatchGet {
			t.Errorf("a request carried %d keys, more than %d", len(r), store.MaxBatchGet)
		}
	}
	// Two chunks (100 + 50) plus three retries of held-back keys.
	if len(api.requests) != 5 {
		t.Errorf("BatchGet made %d requests, want 5 (2 chunks, 3 retries): %v", len(api.requests), api.requests)
	}
	// The two chunks retry on their own; each waits before each retry.
	if len(waits) != 3 || slices.Min(waits) <= 0 {
		t.Errorf("waited %v before the retries, want 3 positive backoffs", waits)
	}
}

func TestBatchGetGivesUpOnKeysNeverProcessed(t *testing.T) {
	t.Parallel()
	base := dynamotest.NewStore(t, endpoint)
	api := &unprocessedAPI{API: dynamodb.NewFromConfig(moto.Config(t, endpoint)), times: 1 << 30, hold: 1}
	s := dynamo.New(api, base.Table())
	s.SetSleep(func(context.Context, time.Duration) error { return nil })
	_, err := s.BatchGet(t.Context(), []string{"a", "b"})
	if !errors.Is(err, store.ErrThrottled) || !strings.Contains(err.Error(), "unprocessed") {
		t.Fatalf("BatchGet with a key never processed: %v; want store.ErrThrottled saying the keys were unprocessed", err)
	}
	if len(api.requests) != dynamo.BatchAttempts {
		t.Errorf("made %d requests, want %d", len(api.requests), dynamo.BatchAttempts)
	}
}

func TestQueryOnLegacyTableReportsMissingIndex(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewLegacyStore(t, endpoint)
	for _, err := range s.Query(t.Context(), store.IndexQuery{Index: store.IndexAuditDay, Key: "2026-12-01"}) {
		if !errors.Is(err, store.ErrIndexMissing) || !strings.Contains(err.Error(), "store migrate") {
			t.Fatalf("Query on a table without the index: %v; want store.ErrIndexMissing naming `store migrate`", err)
		}
		return
	}
	t.Fatal("Query on a table without the index yielded nothing")
}

// TestQueryOnDynamoDBTableWithoutTheIndex: DynamoDB answers a query on an
// index the table lacks with a ValidationException naming the index, where
// moto answers ResourceNotFoundException "Invalid index": DynamoDB's answer
// comes from a stand-in.
func TestQueryOnDynamoDBTableWithoutTheIndex(t *testing.T) {
	t.Parallel()
	f := &fakeDynamo{status: 400, body: `{"__type":"com.amazon.coral.validate#ValidationException","message":"The table does not have the specified index: audit-by-day"}`}
	s, _ := fakeStore(t, f)
	for _, err := range s.Query(t.Context(), store.IndexQuery{Index: store.IndexAuditDay, Key: "2026-12-01"}) {
		if !errors.Is(err, store.ErrIndexMissing) || !strings.Contains(err.Error(), "store migrate") {
			t.Fatalf("Query on a table without the index: %v; want store.ErrIndexMissing naming `store migrate`", err)
		}
		if got := f.last()["IndexName"]; got != store.IndexAuditDay.Name {
			t.Errorf("the query asked index %v, want %s", got, store.IndexAuditDay.Name)
		}
		return
	}
	t.Fatal("Query on a table without the index yielded nothing")
}

func TestInitCreatesIndexes(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewStore(t, endpoint)
	missing, present, err := s.MissingIndexes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 0 || len(present) != len(store.Indexes) {
		t.Errorf("after Init: missing %v, present %v; want all %d present", missing, present, len(store.Indexes))
	}
}

func TestMigrateLegacyTable(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewLegacyStore(t, endpoint)
	rep, err := s.Init(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.MissingIndexes) != len(store.Indexes) || !strings.Contains(strings.Join(rep.Lines(), "\n"), "store migrate") {
		t.Errorf("Init on a legacy table: missing %v; lines %q; want every index named with the fix", rep.MissingIndexes, rep.Lines())
	}
	dry, err := s.Migrate(t.Context(), true)
	if err != nil {
		t.Fatalf("Migrate --dry-run: %v", err)
	}
	var names []string
	for _, ix := range store.Indexes {
		names = append(names, ix.Name)
	}
	if !slices.Equal(dry.Added, names) || !dry.DryRun {
		t.Errorf("dry run would add %v, want %v", dry.Added, names)
	}
	if missing, _, _ := s.MissingIndexes(t.Context()); len(missing) != len(store.Indexes) {
		t.Errorf("dry run changed the table: %d indexes missing after it", len(missing))
	}
	// Items written before the migrate are in the indexes after it: DynamoDB
	// builds a new index from the existing items.
	before := store.Item{store.PK: "ov#a", store.IndexOverrides.Attr: "open"}
	if err := s.Put(t.Context(), before, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	added, err := s.Migrate(t.Context(), false)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if !slices.Equal(added.Added, names) {
		t.Errorf("Migrate added %v, want %v", added.Added, names)
	}
	if missing, present, err := s.MissingIndexes(t.Context()); err != nil || len(missing) != 0 || len(present) != len(store.Indexes) {
		t.Errorf("after Migrate: missing %v, present %v, %v; want all %d present", missing, present, err, len(store.Indexes))
	}
	var found []string
	for it, err := range s.Query(t.Context(), store.IndexQuery{Index: store.IndexOverrides, Key: "open"}) {
		if err != nil {
			t.Fatalf("Query the new index: %v", err)
		}
		found = append(found, it[store.PK].(string))
	}
	if !slices.Equal(found, []string{"ov#a"}) {
		t.Errorf("the new index %s finds %v, want the item written before it [ov#a]", store.IndexOverrides.Name, found)
	}
}

// throughputAPI is an endpoint that wants ProvisionedThroughput on an index
// added to an on-demand table, which DynamoDB refuses there (dynalite 4
// did): Migrate must say the endpoint cannot add indexes, with what to do,
// not wait.
type throughputAPI struct{ dynamo.API }

func (throughputAPI) UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "ValidationException",
		Message: "1 validation error detected: Value null at 'globalSecondaryIndexUpdates.1.member.create.provisionedThroughput' failed to satisfy constraint: Member must not be null"}
}

func TestMigrateOnAnEndpointThatCannotAddIndexes(t *testing.T) {
	t.Parallel()
	legacy := dynamotest.NewLegacyStore(t, endpoint)
	s := dynamo.New(throughputAPI{dynamodb.NewFromConfig(moto.Config(t, endpoint))}, legacy.Table())
	_, err := s.Migrate(t.Context(), false)
	if !errors.Is(err, dynamo.ErrIndexUnsupported) || !strings.Contains(err.Error(), "store init") {
		t.Fatalf("Migrate on an endpoint that wants ProvisionedThroughput: %v; want dynamo.ErrIndexUnsupported naming the fix", err)
	}
}

// buildingAPI forwards to moto, and plays DynamoDB's part moto lacks: it
// checks an UpdateTable that creates an index as DynamoDB does for an
// on-demand table, and afterwards DescribeTable shows the index CREATING for
// one call, then ACTIVE (moto's indexes are ACTIVE at once).
type buildingAPI struct {
	dynamo.API
	mu       sync.Mutex
	added    []types.GlobalSecondaryIndexDescription
	creating int
	updates  int
}

func (b *buildingAPI) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.updates++
	if len(in.GlobalSecondaryIndexUpdates) != 1 || in.GlobalSecondaryIndexUpdates[0].Create == nil {
		return nil, fmt.Errorf("UpdateTable with %d index updates; DynamoDB builds one at a time", len(in.GlobalSecondaryIndexUpdates))
	}
	c := in.GlobalSecondaryIndexUpdates[0].Create
	if c.ProvisionedThroughput != nil {
		return nil, errors.New("ProvisionedThroughput on an index of an on-demand table")
	}
	defined := map[string]bool{}
	for _, d := range in.AttributeDefinitions {
		defined[*d.AttributeName] = d.AttributeType == types.ScalarAttributeTypeS
	}
	for _, k := range c.KeySchema {
		if !defined[*k.AttributeName] {
			return nil, fmt.Errorf("index key %s has no string attribute definition", *k.AttributeName)
		}
	}
	out := &dynamodb.UpdateTableOutput{}
	b.added = append(b.added, types.GlobalSecondaryIndexDescription{IndexName: c.IndexName, IndexStatus: types.IndexStatusCreating})
	b.creating = 1
	return out, nil
}

func (b *buildingAPI) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := b.API.DescribeTable(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.creating > 0 {
		b.creating--
	} else {
		for i := range b.added {
			b.added[i].IndexStatus = types.IndexStatusActive
		}
	}
	out.Table.GlobalSecondaryIndexes = append(out.Table.GlobalSecondaryIndexes, b.added...)
	return out, nil
}

func TestMigrateWaitsUntilIndexActive(t *testing.T) {
	t.Parallel()
	legacy := dynamotest.NewLegacyStore(t, endpoint)
	api := &buildingAPI{API: dynamodb.NewFromConfig(moto.Config(t, endpoint))}
	s := dynamo.New(api, legacy.Table())
	polls := 0
	s.SetSleep(func(context.Context, time.Duration) error { polls++; return nil })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rep, err := s.Migrate(ctx, false)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if len(rep.Added) != len(store.Indexes) || api.updates != len(store.Indexes) {
		t.Errorf("Migrate added %v in %d UpdateTable calls, want %d indexes one call each", rep.Added, api.updates, len(store.Indexes))
	}
	if polls != len(store.Indexes) {
		t.Errorf("Migrate waited %d times, want once per index while it was CREATING", polls)
	}
	again, err := s.Migrate(ctx, false)
	if err != nil || len(again.Added) != 0 || len(again.Present) != len(store.Indexes) {
		t.Errorf("second Migrate: %+v, %v; want nothing added", again, err)
	}
}

// capacityAPI forwards to moto, and reports the capacity DynamoDB charges a
// strongly consistent scan: the size of the items it read, rounded up to 4
// KB, one unit per 4 KB. (moto reports 1 unit per request whatever it read.)
type capacityAPI struct{ dynamo.API }

func (c capacityAPI) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.API.Scan(ctx, in, o...)
	if err != nil || in.ReturnConsumedCapacity == types.ReturnConsumedCapacityNone || in.ReturnConsumedCapacity == "" {
		return out, err
	}
	size := 0
	for _, it := range out.Items {
		size += itemSize(it)
	}
	units := float64((size + 4095) / 4096)
	if !aws.ToBool(in.ConsistentRead) {
		units /= 2
	}
	out.ConsumedCapacity = &types.ConsumedCapacity{TableName: in.TableName, CapacityUnits: aws.Float64(units)}
	return out, nil
}

// itemSize is an item's size as DynamoDB counts it for the string and
// number attributes the scan test writes: each name's length plus each
// value's (a number: about one byte per two digits, plus one).
func itemSize(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name)
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(x.Value)
		case *types.AttributeValueMemberN:
			n += (len(x.Value)+1)/2 + 1
		default:
			n += 8
		}
	}
	return n
}

func TestScanConsumedCapacityAndRate(t *testing.T) {
	t.Parallel()
	base := dynamotest.NewStore(t, endpoint)
	s := dynamo.New(capacityAPI{dynamodb.NewFromConfig(moto.Config(t, endpoint))}, base.Table())
	items := make([]store.Item, 0, 300)
	for i := range 300 {
		items = append(items, store.Item{store.PK: fmt.Sprintf("rl#%03d", i), "pad": strings.Repeat("x", 900)})
	}
	dynamotest.PutBatch(t, moto.Config(t, endpoint), base.Table(), items)
	now := time.Unix(1_800_000_000, 0)
	var slept time.Duration
	rate := &store.ScanRate{UnitsPerSecond: 20,
		Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error {
			slept += d
			now = now.Add(d)
			return nil
		}}
	var stats store.ReadStats
	n := 0
	for _, err := range s.Scan(t.Context(), store.ScanQuery{Prefix: "rl#", PageSize: 50, Stats: &stats, Rate: rate}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 300 || stats.Examined() != 300 {
		t.Fatalf("scan yielded %d, examined %d; want 300", n, stats.Examined())
	}
	// 300 items of ~0.9 KB read consistently cost 67 units (4 KB a unit),
	// 72 as six pages of 50 each rounded up; eventually consistent, half.
	units := stats.Capacity()
	if units < 67 || units > 72 {
		t.Errorf("consumed %.1f read units, want 67 to 72 (every page counted, read consistently)", units)
	}
	// The pacer kept the average at the cap: units consumed / elapsed.
	elapsed := slept.Seconds()
	if elapsed <= 0 || units/elapsed > 20*1.001 {
		t.Errorf("scan consumed %.1f units in %.2f s (%.1f/s), over its cap of 20/s", units, elapsed, units/elapsed)
	}
	t.Logf("consumed %.1f units in %d requests, paced over %.2f s", units, stats.Requests(), elapsed)
}
