package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/store"
)

// TableDefinition is the control table koshactl expects, the one definition
// `store init` creates, `store migrate` completes, and deployment templates
// and IAM policies must match (docs/contracts/store.md): a single string hash
// key "pk", on-demand capacity, and one global secondary index per
// store.Indexes entry, each partitioned by its string attribute and sorted
// by pk.
func TableDefinition(table string) *dynamodb.CreateTableInput {
	attrs := []types.AttributeDefinition{{AttributeName: aws.String(store.PK), AttributeType: types.ScalarAttributeTypeS}}
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range store.Indexes {
		attrs = append(attrs, types.AttributeDefinition{AttributeName: aws.String(ix.Attr), AttributeType: types.ScalarAttributeTypeS})
		gsis = append(gsis, gsiOf(ix))
	}
	return &dynamodb.CreateTableInput{
		TableName:              aws.String(table),
		AttributeDefinitions:   attrs,
		KeySchema:              []types.KeySchemaElement{{AttributeName: aws.String(store.PK), KeyType: types.KeyTypeHash}},
		BillingMode:            types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: gsis,
	}
}

func gsiOf(ix store.Index) types.GlobalSecondaryIndex {
	proj := types.ProjectionTypeAll
	if ix.KeysOnly {
		proj = types.ProjectionTypeKeysOnly
	}
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(ix.Name),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(ix.Attr), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(store.PK), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: proj},
	}
}

// ErrIndexUnsupported reports an endpoint that cannot add an index to an
// existing table. dynalite is one: it refuses an on-demand index creation
// for want of ProvisionedThroughput (which DynamoDB refuses on on-demand
// tables), and given one, accepts the request and builds nothing.
var ErrIndexUnsupported = errors.New("this endpoint cannot add an index to an existing table")

// unsupportedIndexHint is the fix for ErrIndexUnsupported.
const unsupportedIndexHint = "on a development endpoint such as dynalite, recreate the table with `koshactl store init` " +
	"(it creates every index); or leave it as it is: readers fall back to scans"

// MigrateReport says what [Store.Migrate] found and did.
type MigrateReport struct {
	Table string
	Where string
	// Present lists the indexes the table already had.
	Present []string
	// Added lists the indexes Migrate created (or, in a dry run, would).
	Added []string
	// DryRun is true when nothing was changed.
	DryRun bool
}

// Lines renders the report for people, one fact a line.
func (r MigrateReport) Lines() []string {
	where := ""
	if r.Where != "" {
		where = " " + r.Where
	}
	var lines []string
	verb := "added"
	if r.DryRun {
		verb = "would add"
	}
	for _, n := range r.Added {
		lines = append(lines, fmt.Sprintf("table %q%s: %s index %q", r.Table, where, verb, n))
	}
	for _, n := range r.Present {
		lines = append(lines, fmt.Sprintf("table %q%s: index %q already present", r.Table, where, n))
	}
	return lines
}

// MissingIndexes returns the store.Indexes the table does not have.
func (s *Store) MissingIndexes(ctx context.Context) (missing []store.Index, present []string, err error) {
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	if err != nil {
		return nil, nil, s.classify(ctx, "describe table", "", err)
	}
	if err := checkSchema(out.Table); err != nil {
		return nil, nil, fmt.Errorf("migrate table %q: %w", s.table, err)
	}
	have := map[string]bool{}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		have[aws.ToString(g.IndexName)] = true
	}
	for _, ix := range store.Indexes {
		if have[ix.Name] {
			present = append(present, ix.Name)
		} else {
			missing = append(missing, ix)
		}
	}
	return missing, present, nil
}

// Migrate adds the indexes the table lacks, one UpdateTable at a time
// (DynamoDB builds one new index per request), waiting after each until the
// index is ACTIVE (at most [MigrateWait] each). With dryRun it only reports.
// Backfilling index attributes on existing items is the domain's part (the
// item shapes are theirs): `store migrate` runs it after this.
func (s *Store) Migrate(ctx context.Context, dryRun bool) (MigrateReport, error) {
	r := MigrateReport{Table: s.table, Where: s.where, DryRun: dryRun}
	missing, present, err := s.MissingIndexes(ctx)
	if err != nil {
		return r, err
	}
	r.Present = present
	for _, ix := range missing {
		if dryRun {
			r.Added = append(r.Added, ix.Name)
			continue
		}
		if err := s.addIndex(ctx, ix); err != nil {
			return r, err
		}
		r.Added = append(r.Added, ix.Name)
	}
	return r, nil
}

func (s *Store) addIndex(ctx context.Context, ix store.Index) error {
	g := gsiOf(ix)
	_, err := s.client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: &s.table,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(store.PK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(ix.Attr), AttributeType: types.ScalarAttributeTypeS},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection,
		}}},
	})
	if err != nil {
		op := fmt.Sprintf("add index %q", ix.Name)
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" &&
			strings.Contains(apiErr.ErrorMessage(), "provisionedThroughput") {
			return fmt.Errorf("%s: %s: %w (%s); %s", op, s.Describe(), ErrIndexUnsupported, apiErr.ErrorMessage(), unsupportedIndexHint)
		}
		return s.classify(ctx, op, "", err)
	}
	return s.waitIndex(ctx, ix.Name)
}

// MigrateWait is the longest Migrate waits for one new index to become
// ACTIVE: DynamoDB builds it from the existing items, which takes minutes on
// a large table.
const MigrateWait = 30 * time.Minute

// waitIndex polls until the table and the index are ACTIVE.
func (s *Store) waitIndex(ctx context.Context, name string) error {
	op := fmt.Sprintf("wait for index %q of table %q", name, s.table)
	deadline := time.Now().Add(MigrateWait)
	delay := initMinDelay
	for {
		out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
		if err != nil {
			return s.classify(ctx, op, "", err)
		}
		var found *types.GlobalSecondaryIndexDescription
		for i, g := range out.Table.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == name {
				found = &out.Table.GlobalSecondaryIndexes[i]
			}
		}
		if found == nil {
			return fmt.Errorf("%s: %s accepted the index and did not build it: %w; %s", op, s.Describe(), ErrIndexUnsupported, unsupportedIndexHint)
		}
		if found.IndexStatus == types.IndexStatusActive && out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: still %s after %v; DynamoDB keeps building it: run `koshactl store migrate` again later",
				op, found.IndexStatus, MigrateWait)
		}
		if err := s.wait(ctx, delay); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		delay = min(delay*2, initMaxDelay)
	}
}
