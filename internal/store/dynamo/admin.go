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

// Bounds of [Store.Init]'s wait for a new table to become ACTIVE.
const (
	// InitWait is the longest Init waits for the table to become ACTIVE.
	InitWait     = 2 * time.Minute
	initMinDelay = time.Second
	initMaxDelay = 5 * time.Second
)

// TTLState is what [Store.Init] found or did about DynamoDB TTL on the "ttl"
// attribute.
type TTLState string

// TTL states.
const (
	// TTLEnabled: Init enabled TTL on "ttl".
	TTLEnabled TTLState = "enabled"
	// TTLAlreadyEnabled: TTL was already on "ttl".
	TTLAlreadyEnabled TTLState = "already enabled"
	// TTLOtherAttribute: TTL is on another attribute; Init left it alone.
	TTLOtherAttribute TTLState = "on another attribute"
	// TTLUnsupported: the endpoint does not implement TTL (some local ones).
	TTLUnsupported TTLState = "unsupported"
	// TTLDisabling: TTL is being turned off; DynamoDB accepts no change
	// until that finishes (up to an hour).
	TTLDisabling TTLState = "being disabled"
)

// InitReport says what [Store.Init] found and did.
type InitReport struct {
	// Table is the table's name.
	Table string
	// Where names the endpoint or region.
	Where string
	// Created is true when Init created the table, false when it existed.
	Created bool
	// Status is the table's status when Init returned (ACTIVE).
	Status string
	// TTL is the state of TTL on the "ttl" attribute.
	TTL TTLState
	// TTLAttribute is the attribute TTL is on when TTL is TTLOtherAttribute.
	TTLAttribute string
	// MissingIndexes names the indexes an existing table lacks (`koshactl
	// store migrate` adds them).
	MissingIndexes []string
}

// Lines renders the report for people, one fact a line.
func (r InitReport) Lines() []string {
	where := ""
	if r.Where != "" {
		where = " " + r.Where
	}
	var lines []string
	if r.Created {
		lines = append(lines, fmt.Sprintf("table %q created%s (key pk: string, on-demand capacity, %d indexes), status %s",
			r.Table, where, len(store.Indexes), r.Status))
	} else {
		lines = append(lines, fmt.Sprintf("table %q already exists%s, status %s", r.Table, where, r.Status))
	}
	if len(r.MissingIndexes) > 0 {
		lines = append(lines, fmt.Sprintf("the table lacks the indexes %s: add them with `koshactl store migrate` "+
			"(until then, audit and override listings read an older index, or scan the table)", strings.Join(r.MissingIndexes, ", ")))
	}
	switch r.TTL {
	case TTLEnabled:
		lines = append(lines, fmt.Sprintf("time to live enabled on attribute %q", store.TTLAttr))
	case TTLAlreadyEnabled:
		lines = append(lines, fmt.Sprintf("time to live already enabled on attribute %q", store.TTLAttr))
	case TTLOtherAttribute:
		lines = append(lines, fmt.Sprintf("time to live is enabled on attribute %q, not %q: left as it is; "+
			"expired koshactl items stay until deleted (koshactl checks expiry itself)", r.TTLAttribute, store.TTLAttr))
	case TTLDisabling:
		lines = append(lines, fmt.Sprintf("time to live is being disabled on attribute %q: run init again in an hour to enable it on %q",
			r.TTLAttribute, store.TTLAttr))
	case TTLUnsupported:
		lines = append(lines, "time to live not supported by this endpoint: expired items stay until deleted; "+
			"nothing depends on it (koshactl checks expiry itself)")
	}
	return lines
}

// Init makes the table ready: it creates it when missing (pk string hash
// key, on-demand capacity), waits until it is ACTIVE (at most [InitWait]),
// and enables TTL on the "ttl" attribute where the endpoint supports it. It
// is idempotent: on an existing table it only reports, and fills in TTL if
// it is off.
func (s *Store) Init(ctx context.Context) (InitReport, error) {
	r := InitReport{Table: s.table, Where: s.where}
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		created, err := s.create(ctx)
		if err != nil {
			return r, err
		}
		r.Created = created
	case err != nil:
		return r, s.classify(ctx, "describe table", "", err)
	default:
		if err := checkSchema(out.Table); err != nil {
			return r, fmt.Errorf("init table %q: %w", s.table, err)
		}
		if out.Table.TableStatus == types.TableStatusDeleting {
			return r, fmt.Errorf("init table %q: the table is being deleted; run init again once it is gone", s.table)
		}
	}
	status, err := s.waitActive(ctx)
	if err != nil {
		return r, err
	}
	r.Status = status
	if !r.Created {
		missing, _, err := s.MissingIndexes(ctx)
		if err != nil {
			return r, err
		}
		for _, ix := range missing {
			r.MissingIndexes = append(r.MissingIndexes, ix.Name)
		}
	}
	r.TTL, r.TTLAttribute, err = s.enableTTL(ctx)
	return r, err
}

// create creates the table; created is false when another caller created
// it first.
func (s *Store) create(ctx context.Context) (created bool, err error) {
	_, err = s.client.CreateTable(ctx, TableDefinition(s.table))
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return false, nil // another init created it meanwhile
	}
	if err != nil {
		return false, s.classify(ctx, fmt.Sprintf("create table %q", s.table), "", err)
	}
	return true, nil
}

// checkSchema refuses a table whose key is not koshactl's single string pk.
func checkSchema(t *types.TableDescription) error {
	if t == nil {
		return errors.New("no table description")
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, d := range t.AttributeDefinitions {
		attrTypes[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	ok := len(t.KeySchema) == 1 &&
		aws.ToString(t.KeySchema[0].AttributeName) == store.PK &&
		t.KeySchema[0].KeyType == types.KeyTypeHash &&
		attrTypes[store.PK] == types.ScalarAttributeTypeS
	if ok {
		return nil
	}
	var have []string
	for _, k := range t.KeySchema {
		name := aws.ToString(k.AttributeName)
		have = append(have, fmt.Sprintf("%s (%s, %s)", name, attrTypes[name], k.KeyType))
	}
	return fmt.Errorf("the table exists with key %v; koshactl needs a single string hash key %q: use another table name in the context", have, store.PK)
}

func (s *Store) waitActive(ctx context.Context) (string, error) {
	w := dynamodb.NewTableExistsWaiter(s.client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = initMinDelay
		o.MaxDelay = initMaxDelay
	})
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: &s.table}, InitWait)
	if err != nil {
		if ctx.Err() == nil && !isAPIError(err) {
			return "", fmt.Errorf("wait for table %q to become active (at most %v): %w", s.table, InitWait, err)
		}
		return "", s.classify(ctx, fmt.Sprintf("wait for table %q", s.table), "", err)
	}
	return string(out.Table.TableStatus), nil
}

func isAPIError(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr)
}

// enableTTL points TTL at the "ttl" attribute unless it is on already (or on
// another attribute, which is the operator's choice to keep).
func (s *Store) enableTTL(ctx context.Context) (TTLState, string, error) {
	out, err := s.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &s.table})
	if unsupported(err) {
		return TTLUnsupported, "", nil
	}
	if err != nil {
		return "", "", s.classify(ctx, "describe time to live", "", err)
	}
	if d := out.TimeToLiveDescription; d != nil {
		attr := aws.ToString(d.AttributeName)
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if attr == store.TTLAttr {
				return TTLAlreadyEnabled, "", nil
			}
			return TTLOtherAttribute, attr, nil
		case types.TimeToLiveStatusDisabling:
			// DynamoDB refuses a change while disabling; say so rather than fail.
			return TTLDisabling, attr, nil
		case types.TimeToLiveStatusDisabled:
			// Enabled below.
		}
	}
	_, err = s.client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &s.table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(store.TTLAttr),
			Enabled:       aws.Bool(true),
		},
	})
	if unsupported(err) {
		return TTLUnsupported, "", nil
	}
	if err != nil {
		return "", "", s.classify(ctx, "enable time to live", "", err)
	}
	return TTLEnabled, "", nil
}

// unsupported reports an endpoint that does not implement the operation
// (dynalite answered UnknownOperationException for UpdateTimeToLive).
func unsupported(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "UnknownOperationException", "UnsupportedOperationException", "NotImplemented", "NotImplementedException":
		return true
	}
	return false
}
