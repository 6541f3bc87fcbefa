package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// fakeTime makes s wait on a fake clock that moves by each wait at once,
// and returns how many waits it made.
func fakeTime(s *dynamo.Store) func() int {
	fc := clocktest.NewFake(time.Unix(1_800_000_000, 0))
	s.SetClock(fc)
	var mu sync.Mutex
	waits := 0
	s.SetSleep(func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits++
		fc.Advance(d)
		return nil
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return waits
	}
}

// creatingAPI is a table made by store init (every index ACTIVE on
// moto) whose index named creating shows CREATING in the first
// `reads` DescribeTable answers: a migrate interrupted while DynamoDB
// builds it, which moto cannot produce (its indexes are ACTIVE at once).
type creatingAPI struct {
	dynamo.API
	creating string
	mu       sync.Mutex
	reads    int
	updates  int
}

func (c *creatingAPI) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := c.API.DescribeTable(ctx, in, o...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads > 0 {
		c.reads--
		for i, g := range out.Table.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == c.creating {
				out.Table.GlobalSecondaryIndexes[i].IndexStatus = types.IndexStatusCreating
				out.Table.TableStatus = types.TableStatusUpdating
			}
		}
	}
	return out, nil
}

func (c *creatingAPI) UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates++
	return nil, errors.New("UpdateTable on a table that has every index")
}

// A rerun of migrate while an index is still CREATING waits until it is
// ACTIVE and says it was building, rather than counting it present; a dry
// run says it is building.
func TestMigrateWaitsForAnIndexStillBuilding(t *testing.T) {
	full := dynamotest.NewStore(t, endpoint)
	api := &creatingAPI{API: dynamodb.NewFromConfig(moto.Config(t, endpoint)), creating: store.IndexOverrides.Name, reads: 4}
	s := dynamo.New(api, full.Table())
	waits := fakeTime(s)
	dry, err := s.Migrate(t.Context(), true)
	if err != nil || len(dry.Building) != 1 || len(dry.Present) != len(store.Indexes)-1 ||
		!strings.Contains(strings.Join(dry.Lines(), "\n"), `index "overrides" is still being built`) {
		t.Errorf("dry run while overrides is CREATING: %+v, %v\n%s", dry, err, strings.Join(dry.Lines(), "\n"))
	}
	rep, err := s.Migrate(t.Context(), false)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if len(rep.Building) != 1 || rep.Building[0] != store.IndexOverrides.Name || len(rep.Added) != 0 || api.updates != 0 {
		t.Errorf("Migrate while overrides is CREATING: %+v (%d UpdateTable calls)", rep, api.updates)
	}
	if waits() < 2 || api.reads != 0 {
		t.Errorf("Migrate waited %d times, %d CREATING answers left; want it to poll until ACTIVE", waits(), api.reads)
	}
	if l := strings.Join(rep.Lines(), "\n"); !strings.Contains(l, `index "overrides" was still being built; waited until it was ACTIVE`) {
		t.Errorf("report:\n%s", l)
	}
}

// laggingAPI is buildingAPI (UpdateTable checked as DynamoDB does, the new
// index CREATING, then ACTIVE) whose DescribeTable leaves a new index out
// of its first `lag` answers after each UpdateTable: DescribeTable is
// eventually consistent. listed says whether UpdateTable's answer lists
// the index, as DynamoDB's does.
type laggingAPI struct {
	buildingAPI
	lag, left int
	listed    bool
	reads     int
}

func (l *laggingAPI) UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	out, err := l.buildingAPI.UpdateTable(ctx, in, o...)
	if err != nil {
		return nil, err
	}
	l.left = l.lag
	if l.listed {
		out.TableDescription = &types.TableDescription{GlobalSecondaryIndexes: []types.GlobalSecondaryIndexDescription{
			{IndexName: in.GlobalSecondaryIndexUpdates[0].Create.IndexName, IndexStatus: types.IndexStatusCreating}}}
	}
	return out, nil
}

func (l *laggingAPI) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	l.reads++
	if l.left > 0 {
		l.left--
		out, err := l.API.DescribeTable(ctx, in, o...) // moto's: without the indexes added
		if err == nil {
			l.mu.Lock()
			out.Table.GlobalSecondaryIndexes = append(out.Table.GlobalSecondaryIndexes, l.added[:len(l.added)-1]...)
			l.mu.Unlock()
		}
		return out, err
	}
	return l.buildingAPI.DescribeTable(ctx, in, o...)
}

// An index missing from the first DescribeTable answers after UpdateTable
// is read again before migrate decides: it appears, is waited for, and the
// report says it appeared late. One that never appears is
// ErrIndexUnsupported after IndexAppearReads reads, and the error says
// so; one the UpdateTable answer listed is waited for longer.
func TestMigrateReadsAgainBeforeCallingAnIndexUnsupported(t *testing.T) {
	legacy := dynamotest.NewLegacyStore(t, endpoint)
	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))

	late := &laggingAPI{buildingAPI: buildingAPI{API: client}, lag: 2}
	s := dynamo.New(late, legacy.Table())
	fakeTime(s)
	rep, err := s.Migrate(t.Context(), false)
	if err != nil {
		t.Fatalf("Migrate with DescribeTable lagging 2 reads: %v", err)
	}
	if len(rep.Added) != len(store.Indexes) || len(rep.Notes) != len(store.Indexes) ||
		!strings.Contains(rep.Notes[0], "only at read 3") || !strings.Contains(rep.Notes[0], "eventually consistent") {
		t.Errorf("report: %+v", rep)
	}

	never := &laggingAPI{buildingAPI: buildingAPI{API: client}, lag: 1 << 30}
	s = dynamo.New(never, legacy.Table())
	fakeTime(s)
	_, err = s.Migrate(t.Context(), false)
	if !errors.Is(err, dynamo.ErrIndexUnsupported) || !strings.Contains(err.Error(), "not in 5 DescribeTable reads") {
		t.Fatalf("Migrate on an endpoint that never shows the index: %v; want ErrIndexUnsupported after %d reads", err, dynamo.IndexAppearReads)
	}
	if never.reads != 1+dynamo.IndexAppearReads {
		t.Errorf("read the table %d times, want 1 + %d", never.reads, dynamo.IndexAppearReads)
	}

	// Listed by UpdateTable: accepted, so a longer lag is waited out.
	listed := &laggingAPI{buildingAPI: buildingAPI{API: client}, lag: 2 * dynamo.IndexAppearReads, listed: true}
	s = dynamo.New(listed, legacy.Table())
	fakeTime(s)
	if rep, err := s.Migrate(t.Context(), false); err != nil || len(rep.Added) != len(store.Indexes) {
		t.Errorf("Migrate with the index in UpdateTable's answer and a long lag: %+v, %v", rep, err)
	}
}

// A table a CloudFormation stack manages (its aws:cloudformation:stack-name
// tag) is refused: migrate adds no index and says how to add them through
// the stack, in a dry run too. The backfill's part is not refused.
func TestMigrateRefusesAStackManagedTable(t *testing.T) {
	legacy := dynamotest.NewLegacyStore(t, endpoint)
	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	desc, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(legacy.Table())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.TagResource(t.Context(), &dynamodb.TagResourceInput{ResourceArn: desc.Table.TableArn,
		Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("platform")}, {Key: aws.String(dynamo.StackNameTag), Value: aws.String("kosha-control")}}}); err != nil {
		t.Fatal(err)
	}
	api := &buildingAPI{API: client}
	s := dynamo.New(api, legacy.Table())
	for _, dry := range []bool{true, false} {
		_, err := s.Migrate(t.Context(), dry)
		if !errors.Is(err, dynamo.ErrStackManaged) || !strings.Contains(err.Error(), `"kosha-control"`) || !strings.Contains(err.Error(), "audit-by-day") ||
			!strings.Contains(err.Error(), dynamo.StackUpgradeDoc+`, "`+dynamo.StackUpgradeSection+`": `+dynamo.StackUpgradeSteps(0)+")") {
			t.Errorf("Migrate (dry run %v) on a stack-managed table: %v; want ErrStackManaged naming the stack and the fix", dry, err)
		}
	}
	if api.updates != 0 {
		t.Errorf("UpdateTable called %d times on a stack-managed table", api.updates)
	}
	// A stack at IndexCount=2 (the table has the first two indexes): the
	// steps left start at 3.
	half := dynamotest.TableName(t)
	def := dynamo.TableDefinition(half)
	def.GlobalSecondaryIndexes = def.GlobalSecondaryIndexes[:2]
	def.AttributeDefinitions = def.AttributeDefinitions[:3]
	made, err := client.CreateTable(t.Context(), def)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.TagResource(t.Context(), &dynamodb.TagResourceInput{ResourceArn: made.TableDescription.TableArn,
		Tags: []types.Tag{{Key: aws.String(dynamo.StackNameTag), Value: aws.String("kosha-control")}}}); err != nil {
		t.Fatal(err)
	}
	halfAPI := &buildingAPI{API: client}
	_, err = dynamo.New(halfAPI, half).Migrate(t.Context(), false)
	if !errors.Is(err, dynamo.ErrStackManaged) || !strings.Contains(err.Error(), "audit-by-actor, overrides, lists:") ||
		!strings.Contains(err.Error(), ": IndexCount=3, then 4, 5)") || halfAPI.updates != 0 {
		t.Errorf("Migrate on a stack-managed table with two indexes: %v (%d updates); want the refusal naming IndexCount=3, then 4, 5", err, halfAPI.updates)
	}
	// A stack-managed table with every index: nothing to refuse.
	full := dynamotest.NewStore(t, endpoint)
	desc, err = client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(full.Table())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.TagResource(t.Context(), &dynamodb.TagResourceInput{ResourceArn: desc.Table.TableArn,
		Tags: []types.Tag{{Key: aws.String(dynamo.StackNameTag), Value: aws.String("kosha-control")}}}); err != nil {
		t.Fatal(err)
	}
	if rep, err := full.Migrate(t.Context(), false); err != nil || len(rep.Present) != len(store.Indexes) {
		t.Errorf("Migrate on a complete stack-managed table: %+v, %v", rep, err)
	}
}
