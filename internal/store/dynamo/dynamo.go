package dynamo

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/store"
)

// DefaultTable is the table name used when none is configured.
const DefaultTable = "kosha-control"

// API is the part of the DynamoDB client the store uses: item reads and
// writes, and the table administration [Store.Init] does. Tests and fault
// injectors may wrap a *dynamodb.Client behind it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	ListTagsOfResource(ctx context.Context, in *dynamodb.ListTagsOfResourceInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ListTagsOfResourceOutput, error)
}

var (
	_ API               = (*dynamodb.Client)(nil)
	_ store.Store       = (*Store)(nil)
	_ store.BatchGetter = (*Store)(nil)
	_ store.Querier     = (*Store)(nil)
)

// Store is the DynamoDB item store. It is safe for concurrent use.
type Store struct {
	client API
	table  string
	// where names the endpoint for messages: its URL, or the AWS region.
	where string
	// sleep, when set, replaces the timer between retries and polls.
	sleep func(ctx context.Context, d time.Duration) error
	// now, when set, replaces the wall clock of the waits' deadlines.
	now func() time.Time
	// timeout is the client's bound on one request, when it says it (an
	// awsconf client does): a request that outlives it is named so.
	timeout time.Duration
}

// New returns a store on table (DefaultTable when empty) through client.
// When client is a *dynamodb.Client its endpoint or region shows in
// [Store.Describe] and in errors.
func New(client API, table string) *Store {
	if table == "" {
		table = DefaultTable
	}
	s := &Store{client: client, table: table}
	if c, ok := client.(interface{ Options() dynamodb.Options }); ok {
		o := c.Options()
		s.where = whereOf(aws.ToString(o.BaseEndpoint), o.Region)
		if hc, ok := o.HTTPClient.(interface{ GetTimeout() time.Duration }); ok {
			s.timeout = hc.GetTimeout()
		}
	}
	return s
}

// NewFromConfig returns a store on table (DefaultTable when empty) with a
// DynamoDB client built from cfg.
func NewFromConfig(cfg aws.Config, table string) *Store {
	return New(dynamodb.NewFromConfig(cfg), table)
}

func whereOf(endpoint, region string) string {
	switch {
	case endpoint != "":
		return "at " + endpoint
	case region != "":
		return "in " + region
	}
	return ""
}

// Table returns the table's name.
func (s *Store) Table() string { return s.table }

// Describe returns, for example, `dynamodb table "kosha-control" in
// eu-west-1`.
func (s *Store) Describe() string {
	d := fmt.Sprintf("dynamodb table %q", s.table)
	if s.where != "" {
		d += " " + s.where
	}
	return d
}

// Close releases nothing: the SDK client needs no closing. It exists for
// store.Store.
func (s *Store) Close() error { return nil }

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{store.PK: &types.AttributeValueMemberS{Value: pk}}
}

// Get returns the item under pk with a strongly consistent read, or an error
// wrapping store.ErrNotFound.
func (s *Store) Get(ctx context.Context, pk string) (store.Item, error) {
	op := fmt.Sprintf("get %q", pk)
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            key(pk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, s.classify(ctx, op, pk, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	it, err := unmarshal(out.Item)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return it, nil
}

// Put writes item if cond holds, replacing any previous item whole.
func (s *Store) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	pk := item.PK()
	op := fmt.Sprintf("put %q", pk)
	if err := item.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	av, err := marshal(store.Normalize(item))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	ex, err := expression(cond)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	in := &dynamodb.PutItemInput{TableName: &s.table, Item: av}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure = ex.parts()
	if _, err := s.client.PutItem(ctx, in); err != nil {
		return s.classify(ctx, op, pk, err)
	}
	return nil
}

// Delete removes the item under pk if cond holds.
func (s *Store) Delete(ctx context.Context, pk string, cond store.Condition) error {
	op := fmt.Sprintf("delete %q", pk)
	ex, err := expression(cond)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	in := &dynamodb.DeleteItemInput{TableName: &s.table, Key: key(pk)}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure = ex.parts()
	if _, err := s.client.DeleteItem(ctx, in); err != nil {
		return s.classify(ctx, op, pk, err)
	}
	return nil
}

// condExpr is a Condition rendered as a DynamoDB ConditionExpression.
type condExpr struct {
	text   string
	names  map[string]string
	values map[string]types.AttributeValue
}

// parts are the request fields of a conditional write: the expression, its
// names and values, and the ask for the item as stored when it fails
// (ALL_OLD). A nil ex (Always) sets none.
func (ex *condExpr) parts() (*string, map[string]string, map[string]types.AttributeValue, types.ReturnValuesOnConditionCheckFailure) {
	if ex == nil {
		return nil, nil, nil, ""
	}
	return &ex.text, ex.names, ex.values, types.ReturnValuesOnConditionCheckFailureAllOld
}

// expression renders cond; nil for Always. Attribute names always go
// through placeholders, so reserved words and names with dots or spaces work.
func expression(cond store.Condition) (*condExpr, error) {
	if err := cond.Validate(); err != nil {
		return nil, err
	}
	if cond.IsAlways() {
		return nil, nil
	}
	ex := &condExpr{names: map[string]string{"#pk": store.PK}}
	if attr, v, ok := cond.Match(); ok {
		// DynamoDB refuses placeholders the expression does not use.
		ex.names = map[string]string{"#a": attr}
		ex.values = map[string]types.AttributeValue{}
		text, err := ex.equals("#a", v)
		if err != nil {
			return nil, fmt.Errorf("%w: condition on %q: %w", store.ErrInvalidItem, attr, err)
		}
		if len(text) > maxConditionBytes {
			return nil, fmt.Errorf("%w: condition on %q: the value is too large to compare in one request (%d bytes of expression, DynamoDB takes %d)",
				store.ErrInvalidItem, attr, len(text), maxConditionBytes)
		}
		ex.text = text
		return ex, nil
	}
	if attr, ok := cond.Lacks(); ok {
		ex.names["#a"] = attr
		ex.text = "attribute_exists(#pk) AND attribute_not_exists(#a)"
		return ex, nil
	}
	if cond.RequiresAbsent() {
		ex.text = "attribute_not_exists(#pk)"
	} else {
		ex.text = "attribute_exists(#pk)"
	}
	return ex, nil
}

// maxConditionBytes is the longest ConditionExpression DynamoDB accepts.
const maxConditionBytes = 4096

// equals renders "the attribute at path equals v". A list or a map is
// compared element by element (its type, its size, then each element at its
// document path), because endpoints have differed on "=" between lists and
// maps: DynamoDB compares their contents, dynalite (once the tests' server)
// never found two equal. A number or a boolean is also checked for its type,
// because moto (the tests' server now) finds true equal to 1 and false to 0,
// as Python does; DynamoDB never finds values of two types equal, so there
// the check changes nothing. Every other type is compared with "=", which the
// endpoints apply alike (sets in any order).
func (ex *condExpr) equals(path string, v any) (string, error) {
	switch x := v.(type) {
	case store.List:
		parts := []string{ex.shape(path, "L", len(x))}
		for i, e := range x {
			p, err := ex.equals(fmt.Sprintf("%s[%d]", path, i), e)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " AND "), nil
	case store.Map:
		parts := []string{ex.shape(path, "M", len(x))}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			name := fmt.Sprintf("#k%d", len(ex.names))
			ex.names[name] = k
			p, err := ex.equals(path+"."+name, x[k])
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " AND "), nil
	}
	av, err := toAttributeValue(v)
	if err != nil {
		return "", err
	}
	switch av.(type) {
	case *types.AttributeValueMemberN:
		return ex.typed(path, "N") + " AND " + path + " = " + ex.value(av), nil
	case *types.AttributeValueMemberBOOL:
		return ex.typed(path, "BOOL") + " AND " + path + " = " + ex.value(av), nil
	}
	return path + " = " + ex.value(av), nil
}

// typed renders "path is of type kind".
func (ex *condExpr) typed(path, kind string) string {
	return "attribute_type(" + path + ", " + ex.value(&types.AttributeValueMemberS{Value: kind}) + ")"
}

// shape renders "path is a kind (L or M) of n elements".
func (ex *condExpr) shape(path, kind string, n int) string {
	t := ex.typed(path, kind)
	size := ex.value(&types.AttributeValueMemberN{Value: strconv.Itoa(n)})
	return t + " AND size(" + path + ") = " + size
}

// value adds a value placeholder for av and returns its name.
func (ex *condExpr) value(av types.AttributeValue) string {
	name := ":v" // the one value of a comparison of anything but a list or map
	if n := len(ex.values); n > 0 {
		name = fmt.Sprintf(":v%d", n)
	}
	ex.values[name] = av
	return name
}

// Scan yields the items whose pk starts with q.Prefix (strongly consistent
// reads, q.PageSize items examined per request). With q.Segments > 1 the
// segments are scanned in parallel; items arrive in no particular order and
// the first error stops every segment. More segments than DynamoDB allows
// (1,000,000) scan in that many.
func (s *Store) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	q.Segments = min(q.Segments, maxSegments)
	return func(yield func(store.Item, error) bool) {
		op := fmt.Sprintf("scan %q", q.Prefix)
		if err := ctx.Err(); err != nil {
			yield(nil, fmt.Errorf("%s: %w", op, err))
			return
		}
		var examined atomic.Int64
		if q.Segments > 1 {
			s.parallelScan(ctx, op, q, &examined, yield)
			return
		}
		stopped := false
		err := s.scanSegment(ctx, op, q, 0, &examined, func(items []store.Item) bool {
			for _, it := range items {
				if !yield(it, nil) {
					stopped = true
					return false
				}
			}
			return true
		})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// maxSegments is the most segments DynamoDB accepts in a parallel scan.
const maxSegments = 1_000_000

// scanSegment reads segment seg of q (the whole table when q has one
// segment) a page at a time: it counts each page (q.Stats, q.Progress with
// the running total of examined), hands its items to emit (false stops the
// scan), then waits until the scan fits q.Rate again.
func (s *Store) scanSegment(ctx context.Context, op string, q store.ScanQuery, seg int, examined *atomic.Int64, emit func([]store.Item) bool) error {
	p := dynamodb.NewScanPaginator(s.client, s.scanInput(q, seg))
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return s.classify(ctx, op, "", err)
		}
		q.Stats.Add(int(out.ScannedCount), consumed(out.ConsumedCapacity))
		total := examined.Add(int64(out.ScannedCount))
		if q.Progress != nil {
			q.Progress(int(total))
		}
		items := make([]store.Item, 0, len(out.Items))
		for _, av := range out.Items {
			it, err := unmarshal(av)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			items = append(items, it)
		}
		if !emit(items) {
			return nil
		}
		if err := q.Rate.Wait(ctx, consumed(out.ConsumedCapacity)); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

// page is one page of a segment, or the error that ended it.
type page struct {
	items []store.Item
	err   error
}

func (s *Store) parallelScan(ctx context.Context, op string, q store.ScanQuery, examined *atomic.Int64, yield func(store.Item, error) bool) {
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan page)
	var wg sync.WaitGroup
	for seg := range q.Segments {
		wg.Go(func() {
			// The consumer drains pages until they close, so a send never
			// blocks for good; an error is never dropped (a canceled caller
			// must see context.Canceled, not an empty scan).
			send := func(p page) bool {
				pages <- p
				return ctx.Err() == nil
			}
			if err := s.scanSegment(ctx, op, q, seg, examined, func(items []store.Item) bool { return send(page{items: items}) }); err != nil {
				send(page{err: err})
			}
		})
	}
	go func() {
		wg.Wait()
		close(pages)
	}()
	// However the loop below ends, stop the segments and wait for them, so no
	// goroutine outlives the scan.
	defer func() {
		cancel()
		for range pages {
		}
	}()
	for p := range pages {
		if p.err != nil {
			yield(nil, p.err)
			return
		}
		for _, it := range p.items {
			if !yield(it, nil) {
				return
			}
		}
	}
}

func (s *Store) scanInput(q store.ScanQuery, segment int) *dynamodb.ScanInput {
	in := &dynamodb.ScanInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	if q.Prefix != "" {
		in.FilterExpression = aws.String("begins_with(#pk, :prefix)")
		in.ExpressionAttributeNames = map[string]string{"#pk": store.PK}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: q.Prefix}}
	}
	if q.PageSize > 0 {
		in.Limit = aws.Int32(int32(min(q.PageSize, 1<<30)))
	}
	if q.Segments > 1 {
		in.Segment = aws.Int32(int32(segment))          //nolint:gosec // G115: segment < q.Segments <= maxSegments (Scan bounds it)
		in.TotalSegments = aws.Int32(int32(q.Segments)) //nolint:gosec // G115: at most maxSegments (Scan bounds it)
	}
	return in
}

// marshal converts an item to DynamoDB attribute values.
func marshal(it store.Item) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(it))
	for k, v := range it {
		av, err := toAttributeValue(v)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %q: %w", store.ErrInvalidItem, k, err)
		}
		out[k] = av
	}
	return out, nil
}

// toAttributeValue converts one value of any of the store's ten types.
func toAttributeValue(v any) (types.AttributeValue, error) {
	switch x := v.(type) {
	case string:
		return &types.AttributeValueMemberS{Value: x}, nil
	case store.Bool:
		return &types.AttributeValueMemberBOOL{Value: bool(x)}, nil
	case store.Null:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case store.Binary:
		return &types.AttributeValueMemberB{Value: x}, nil
	case store.List:
		out := make([]types.AttributeValue, len(x))
		for i, e := range x {
			av, err := toAttributeValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case store.Map:
		out := make(map[string]types.AttributeValue, len(x))
		for k, e := range x {
			av, err := toAttributeValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	case store.StringSet:
		return &types.AttributeValueMemberSS{Value: x}, nil
	case store.NumberSet:
		out := make([]string, len(x))
		for i, n := range x {
			out[i] = string(n)
		}
		return &types.AttributeValueMemberNS{Value: out}, nil
	case store.BinarySet:
		return &types.AttributeValueMemberBS{Value: x}, nil
	}
	n, ok := store.FormatNumber(v)
	if !ok {
		return nil, fmt.Errorf("unsupported type %T", v)
	}
	return &types.AttributeValueMemberN{Value: n}, nil
}

// unmarshal converts DynamoDB attribute values to an item. Every one of
// DynamoDB's ten types is read (see store.Item), so an attribute another
// tool wrote never hides the item, and a Put of the item keeps it.
func unmarshal(av map[string]types.AttributeValue) (store.Item, error) {
	it := make(store.Item, len(av))
	for k, v := range av {
		x, err := fromAttributeValue(v)
		if err != nil {
			return nil, fmt.Errorf("%w: item %q: attribute %q: %w", store.ErrInvalidItem, pkOf(av), k, err)
		}
		it[k] = x
	}
	return it, nil
}

// fromAttributeValue converts one attribute value of any type.
func fromAttributeValue(v types.AttributeValue) (any, error) {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value, nil
	case *types.AttributeValueMemberN:
		return store.ParseNumber(x.Value)
	case *types.AttributeValueMemberBOOL:
		return store.Bool(x.Value), nil
	case *types.AttributeValueMemberNULL:
		return store.Null{}, nil
	case *types.AttributeValueMemberB:
		return store.Binary(x.Value), nil
	case *types.AttributeValueMemberL:
		out := make(store.List, len(x.Value))
		for i, e := range x.Value {
			n, err := fromAttributeValue(e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	case *types.AttributeValueMemberM:
		out := make(store.Map, len(x.Value))
		for k, e := range x.Value {
			n, err := fromAttributeValue(e)
			if err != nil {
				return nil, fmt.Errorf("map key %q: %w", k, err)
			}
			out[k] = n
		}
		return out, nil
	case *types.AttributeValueMemberSS:
		return store.StringSet(x.Value), nil
	case *types.AttributeValueMemberNS:
		out := make(store.NumberSet, len(x.Value))
		for i, n := range x.Value {
			out[i] = store.Number(n)
		}
		return out, nil
	case *types.AttributeValueMemberBS:
		return store.BinarySet(x.Value), nil
	}
	return nil, fmt.Errorf("a type this koshactl does not know (%T): upgrade koshactl", v)
}

func pkOf(av map[string]types.AttributeValue) string {
	if s, ok := av[store.PK].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
