package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
)

// TableDefinition is the control table koshactl expects, the one definition
// `store init` creates, `store migrate` completes, and deployment templates
// and IAM policies must match (docs/contracts/store.md): a single string hash
// key "pk", on-demand capacity, and one global secondary index per
// store.Indexes entry, each partitioned by its string attribute and sorted
// by pk or by its own sort attribute.
func TableDefinition(table string) *dynamodb.CreateTableInput {
	attrs := []types.AttributeDefinition{{AttributeName: aws.String(store.PK), AttributeType: types.ScalarAttributeTypeS}}
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range store.Indexes {
		attrs = append(attrs, indexAttributes(ix)...)
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

// indexAttributes are the definitions of ix's key attributes beside pk:
// its partition attribute, and its sort attribute when it has one.
func indexAttributes(ix store.Index) []types.AttributeDefinition {
	out := []types.AttributeDefinition{{AttributeName: aws.String(ix.Attr), AttributeType: types.ScalarAttributeTypeS}}
	if ix.Sort != "" {
		out = append(out, types.AttributeDefinition{AttributeName: aws.String(ix.Sort), AttributeType: types.ScalarAttributeTypeS})
	}
	return out
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
			{AttributeName: aws.String(ix.SortAttr()), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: proj},
	}
}

// ErrIndexUnsupported reports an endpoint that cannot add an index to an
// existing table. dynalite 4 was one: it refused an on-demand index creation
// for want of ProvisionedThroughput (which DynamoDB refuses on on-demand
// tables), and given one, accepted the request and built nothing. DynamoDB
// and moto add the index.
var ErrIndexUnsupported = errors.New("this endpoint cannot add an index to an existing table")

// unsupportedIndexHint is the fix for ErrIndexUnsupported.
const unsupportedIndexHint = "on a development endpoint, recreate the table with `koshactl store init` " +
	"(it creates every index); or leave it as it is: readers fall back to scans"

// ErrStackManaged reports a table a CloudFormation stack manages: an index
// added out of band makes the stack's next update that adds it fail, so
// [Store.Migrate] leaves the table to the stack.
var ErrStackManaged = exitcode.New(exitcode.Conflict, "the table is managed by a CloudFormation stack")

// StackNameTag is the tag CloudFormation puts on every resource of a stack.
const StackNameTag = "aws:cloudformation:stack-name"

// How a stack-managed table gains its indexes, as [ErrStackManaged]'s error
// says and the deployment templates and their README implement (a test holds
// the three to these names): the CloudFormation template's parameter (the
// Terraform module's variable is index_count) declares the first N indexes of
// [store.Indexes], raised by one per stack update.
const (
	StackUpgradeDoc        = "deploy/README.md"
	StackUpgradeSection    = "Upgrading a stack-managed table"
	StackIndexParameter    = "IndexCount"
	TerraformIndexVariable = "index_count"
)

// StackUpgradeSteps names the stack updates that take a table with the
// first have indexes of [store.Indexes] to all of them:
// "IndexCount=1, then 2, 3, 4" from none.
func StackUpgradeSteps(have int) string {
	have = max(0, min(have, len(store.Indexes)-1))
	steps := fmt.Sprintf("%s=%d", StackIndexParameter, have+1)
	var rest []string
	for n := have + 2; n <= len(store.Indexes); n++ {
		rest = append(rest, fmt.Sprint(n))
	}
	if len(rest) > 0 {
		steps += ", then " + strings.Join(rest, ", ")
	}
	return steps
}

// IndexAppearReads is how many DescribeTable reads [Store.Migrate] makes
// for an index it just asked for before it decides the endpoint did not
// build it: DescribeTable is eventually consistent, and an index created a
// moment ago may be missing from the first reads. An endpoint whose
// UpdateTable answer lists the index has accepted it, and is waited on to
// the end of [MigrateWait].
const IndexAppearReads = 5

// MigrateReport says what [Store.Migrate] found and did.
type MigrateReport struct {
	Table string
	Where string
	// Present lists the indexes the table already had, ACTIVE.
	Present []string
	// Added lists the indexes Migrate created (or, in a dry run, would).
	Added []string
	// Building lists the indexes that were still being built (CREATING)
	// when Migrate started: it waited until they were ACTIVE (in a dry run,
	// it only says so).
	Building []string
	// Notes are facts about the waits worth a line (an index that appeared
	// in DescribeTable only after some reads).
	Notes []string
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
	for _, n := range r.Building {
		if r.DryRun {
			lines = append(lines, fmt.Sprintf("table %q%s: index %q is still being built (CREATING); migrate would wait for it", r.Table, where, n))
		} else {
			lines = append(lines, fmt.Sprintf("table %q%s: index %q was still being built; waited until it was ACTIVE", r.Table, where, n))
		}
	}
	for _, n := range r.Present {
		lines = append(lines, fmt.Sprintf("table %q%s: index %q already present", r.Table, where, n))
	}
	for _, n := range r.Notes {
		lines = append(lines, fmt.Sprintf("table %q%s: %s", r.Table, where, n))
	}
	return lines
}

// indexStates reads the table and the status of each of its indexes.
func (s *Store) indexStates(ctx context.Context) (*types.TableDescription, map[string]types.IndexStatus, error) {
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	if err != nil {
		return nil, nil, s.classify(ctx, "describe table", "", err)
	}
	if err := checkSchema(out.Table); err != nil {
		return nil, nil, fmt.Errorf("migrate table %q: %w", s.table, err)
	}
	states := map[string]types.IndexStatus{}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		states[aws.ToString(g.IndexName)] = g.IndexStatus
	}
	return out.Table, states, nil
}

// MissingIndexes returns the store.Indexes the table does not have, and
// the names of those it has (ACTIVE or still being built).
func (s *Store) MissingIndexes(ctx context.Context) (missing []store.Index, present []string, err error) {
	_, states, err := s.indexStates(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, ix := range store.Indexes {
		if _, ok := states[ix.Name]; ok {
			present = append(present, ix.Name)
		} else {
			missing = append(missing, ix)
		}
	}
	return missing, present, nil
}

// Migrate adds the indexes the table lacks, one UpdateTable at a time
// (DynamoDB builds one new index per request), waiting after each until the
// index is ACTIVE (at most [MigrateWait] each). An index still being built
// (a migrate interrupted, or another one running) is waited for, not
// counted as present. A table a CloudFormation stack manages (its
// [StackNameTag] tag) is refused with [ErrStackManaged] when it lacks an
// index: the stack must add it. With dryRun it only reports. Backfilling
// index attributes on existing items is the domain's part (the item shapes
// are theirs): `store migrate` runs it after this.
func (s *Store) Migrate(ctx context.Context, dryRun bool) (MigrateReport, error) {
	r := MigrateReport{Table: s.table, Where: s.where, DryRun: dryRun}
	table, states, err := s.indexStates(ctx)
	if err != nil {
		return r, err
	}
	var missing []store.Index
	for _, ix := range store.Indexes {
		st, ok := states[ix.Name]
		switch {
		case !ok:
			missing = append(missing, ix)
		case st == types.IndexStatusCreating:
			r.Building = append(r.Building, ix.Name)
		case st == types.IndexStatusDeleting:
			return r, fmt.Errorf("migrate table %q: index %q is being deleted; run `koshactl store migrate` again once it is gone", s.table, ix.Name)
		default:
			r.Present = append(r.Present, ix.Name)
		}
	}
	if len(missing) > 0 {
		if err := s.checkNotStackManaged(ctx, table, missing); err != nil {
			return r, err
		}
	}
	if !dryRun {
		for _, name := range r.Building {
			if _, err := s.waitIndex(ctx, name, true); err != nil {
				return r, err
			}
		}
	}
	for _, ix := range missing {
		if dryRun {
			r.Added = append(r.Added, ix.Name)
			continue
		}
		note, err := s.addIndex(ctx, ix)
		if err != nil {
			return r, err
		}
		r.Added = append(r.Added, ix.Name)
		if note != "" {
			r.Notes = append(r.Notes, note)
		}
	}
	return r, nil
}

// checkNotStackManaged refuses a table tagged by CloudFormation. An
// endpoint that does not implement tags (DynamoDB Local) manages no stack.
func (s *Store) checkNotStackManaged(ctx context.Context, table *types.TableDescription, missing []store.Index) error {
	arn := aws.ToString(table.TableArn)
	if arn == "" {
		return nil
	}
	var tags []types.Tag
	in := &dynamodb.ListTagsOfResourceInput{ResourceArn: &arn}
	for {
		out, err := s.client.ListTagsOfResource(ctx, in)
		if unsupported(err) {
			return nil
		}
		if err != nil {
			return s.classify(ctx, fmt.Sprintf("list tags of table %q", s.table), "", err)
		}
		tags = append(tags, out.Tags...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	for _, t := range tags {
		if aws.ToString(t.Key) != StackNameTag {
			continue
		}
		names := make([]string, len(missing))
		for i, ix := range missing {
			names[i] = ix.Name
		}
		// The stack declares the first indexes of store.Indexes; when the
		// missing ones are the rest, the next update is the one after them.
		have := 0
		if slices.Equal(missing, store.Indexes[len(store.Indexes)-len(missing):]) {
			have = len(store.Indexes) - len(missing)
		}
		return fmt.Errorf("migrate table %q: %w %q (tag %s) and lacks the indexes %s: adding them here would make the stack's next update fail; "+
			"add them through the stack instead, one per update (%s, %q: %s), then run `koshactl store migrate` to index existing records",
			s.table, ErrStackManaged, aws.ToString(t.Value), StackNameTag, strings.Join(names, ", "),
			StackUpgradeDoc, StackUpgradeSection, StackUpgradeSteps(have))
	}
	return nil
}

// addIndex creates one index and waits until it is ACTIVE; note says when
// DescribeTable showed it only after some reads.
func (s *Store) addIndex(ctx context.Context, ix store.Index) (note string, err error) {
	g := gsiOf(ix)
	out, err := s.client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: &s.table,
		AttributeDefinitions: append([]types.AttributeDefinition{
			{AttributeName: aws.String(store.PK), AttributeType: types.ScalarAttributeTypeS},
		}, indexAttributes(ix)...),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection,
		}}},
	})
	if err != nil {
		op := fmt.Sprintf("add index %q", ix.Name)
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" &&
			strings.Contains(apiErr.ErrorMessage(), "provisionedThroughput") {
			return "", fmt.Errorf("%s: %s: %w (%s); %s", op, s.Describe(), ErrIndexUnsupported, apiErr.ErrorMessage(), unsupportedIndexHint)
		}
		return "", s.classify(ctx, op, "", err)
	}
	accepted := false
	if out != nil && out.TableDescription != nil {
		for _, d := range out.TableDescription.GlobalSecondaryIndexes {
			accepted = accepted || aws.ToString(d.IndexName) == ix.Name
		}
	}
	reads, err := s.waitIndex(ctx, ix.Name, accepted)
	if err == nil && reads > 1 {
		note = fmt.Sprintf("index %q appeared in DescribeTable only at read %d (DescribeTable is eventually consistent)", ix.Name, reads)
	}
	return note, err
}

// MigrateWait is the longest Migrate waits for one new index to become
// ACTIVE: DynamoDB builds it from the existing items, which takes minutes on
// a large table.
const MigrateWait = 30 * time.Minute

// waitIndex polls until the table and the index are ACTIVE, on the store's
// clock, and returns the read at which the index first showed. An index
// missing from [IndexAppearReads] reads is ErrIndexUnsupported unless
// accepted (the UpdateTable answer listed it, or it was seen building):
// then it is waited for until [MigrateWait].
func (s *Store) waitIndex(ctx context.Context, name string, accepted bool) (int, error) {
	op := fmt.Sprintf("wait for index %q of table %q", name, s.table)
	began := s.clockNow()
	deadline := began.Add(MigrateWait)
	delay := initMinDelay
	seenAt := 0
	for read := 1; ; read++ {
		out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
		if err != nil {
			return seenAt, s.classify(ctx, op, "", err)
		}
		var found *types.GlobalSecondaryIndexDescription
		for i, g := range out.Table.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == name {
				found = &out.Table.GlobalSecondaryIndexes[i]
			}
		}
		switch {
		case found == nil && !accepted && read >= IndexAppearReads:
			return seenAt, fmt.Errorf("%s: %s accepted the index and did not build it (not in %d DescribeTable reads over %v, and not in its UpdateTable answer): %w; %s",
				op, s.Describe(), read, s.clockNow().Sub(began).Round(time.Second), ErrIndexUnsupported, unsupportedIndexHint)
		case found != nil && seenAt == 0:
			seenAt = read
		}
		if found != nil && found.IndexStatus == types.IndexStatusActive && out.Table.TableStatus == types.TableStatusActive {
			return seenAt, nil
		}
		if s.clockNow().After(deadline) {
			state := "not yet in DescribeTable"
			if found != nil {
				state = "still " + string(found.IndexStatus)
			}
			return seenAt, fmt.Errorf("%s: %s after %v; DynamoDB keeps building it: run `koshactl store migrate` again later",
				op, state, MigrateWait)
		}
		if err := s.wait(ctx, delay); err != nil {
			return seenAt, fmt.Errorf("%s: %w", op, err)
		}
		delay = min(delay*2, initMaxDelay)
	}
}
