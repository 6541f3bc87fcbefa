package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// fakeDynamo answers every request with one canned response and records the
// request bodies, to test what real DynamoDB says that moto cannot
// (throttling, expired tokens, ALL_OLD on a failed condition).
type fakeDynamo struct {
	status int
	body   string

	mu       sync.Mutex
	requests []map[string]any
}

func (f *fakeDynamo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(b, &req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(f.status)
	_, _ = io.WriteString(w, f.body)
}

func (f *fakeDynamo) last() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func fakeStore(t *testing.T, f *fakeDynamo) (*dynamo.Store, string) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg, err := awsconf.Load(context.Background(), moto.Options(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	return dynamo.NewFromConfig(cfg, "ctl"), srv.URL
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	apiErr := func(code string) string {
		return `{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `","message":"test says ` + code + `"}`
	}
	for _, tc := range []struct {
		code   string
		status int
		want   error
		also   error // another class the error must match too
	}{
		{"ProvisionedThroughputExceededException", 400, store.ErrThrottled, store.ErrUnavailable},
		{"ThrottlingException", 400, store.ErrThrottled, store.ErrUnavailable},
		{"RequestLimitExceeded", 400, store.ErrThrottled, store.ErrUnavailable},
		{"UnrecognizedClientException", 400, store.ErrCredentials, nil},
		{"ExpiredTokenException", 400, store.ErrCredentials, nil},
		{"AccessDeniedException", 400, store.ErrCredentials, nil},
		{"InvalidSignatureException", 400, store.ErrCredentials, nil},
		{"MissingAuthenticationTokenException", 400, store.ErrCredentials, nil},
		{"ResourceNotFoundException", 400, store.ErrTableMissing, nil},
		{"InternalServerError", 500, store.ErrUnavailable, nil},
		{"ServiceUnavailable", 503, store.ErrUnavailable, nil},
	} {
		t.Run(tc.code, func(t *testing.T) {
			s, _ := fakeStore(t, &fakeDynamo{status: tc.status, body: apiErr(tc.code)})
			_, err := s.Get(context.Background(), "breaker#db")
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s: %v, want %v", tc.code, err, tc.want)
			}
			if tc.also != nil && !errors.Is(err, tc.also) {
				t.Errorf("%s: %v does not also match %v", tc.code, err, tc.also)
			}
			for _, other := range []error{store.ErrNotFound, store.ErrConditionFailed, store.ErrTableMissing, store.ErrCredentials, store.ErrThrottled} {
				if other != tc.want && other != tc.also && errors.Is(err, other) {
					t.Errorf("%s: also matches %v", tc.code, other)
				}
			}
		})
	}
	t.Run("bare 502", func(t *testing.T) {
		s, url := fakeStore(t, &fakeDynamo{status: 502, body: "bad gateway"})
		_, err := s.Get(context.Background(), "x")
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), url) {
			t.Errorf("HTTP 502: %v, want ErrUnavailable naming %s", err, url)
		}
	})
}

func TestConditionalPutRequestAndCurrentItem(t *testing.T) {
	t.Parallel()
	f := &fakeDynamo{status: 400, body: `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
		"message":"The conditional request failed",
		"Item":{"pk":{"S":"rl#a"},"tokens":{"N":"3.5"},"updated_at":{"N":"1000"}}}`}
	s, _ := fakeStore(t, f)
	err := s.Put(context.Background(), store.Item{store.PK: "rl#a", "tokens": 2.5, "updated_at": int64(1001)},
		store.IfEquals("updated_at", int64(999)))
	var ce *store.ConditionError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ConditionError", err)
	}
	if ce.PK != "rl#a" {
		t.Errorf("PK = %q", ce.PK)
	}
	if v, _ := ce.Current.Float("tokens"); v != 3.5 {
		t.Errorf("Current = %v, want the item DynamoDB returned", ce.Current)
	}
	if v, ok := ce.Current["updated_at"].(int64); !ok || v != 1000 {
		t.Errorf("Current updated_at = %#v, want int64(1000)", ce.Current["updated_at"])
	}

	req := f.last()
	if req["ReturnValuesOnConditionCheckFailure"] != "ALL_OLD" {
		t.Errorf("ReturnValuesOnConditionCheckFailure = %v, want ALL_OLD", req["ReturnValuesOnConditionCheckFailure"])
	}
	// A number is compared with its type too (see equals).
	if req["ConditionExpression"] != "attribute_type(#a, :v) AND #a = :v1" {
		t.Errorf("ConditionExpression = %v", req["ConditionExpression"])
	}
	names, _ := req["ExpressionAttributeNames"].(map[string]any)
	if _, unused := names["#pk"]; unused || names["#a"] != "updated_at" {
		t.Errorf("ExpressionAttributeNames = %v", names)
	}
	values, _ := req["ExpressionAttributeValues"].(map[string]any)
	if ty, _ := values[":v"].(map[string]any); ty["S"] != "N" {
		t.Errorf("ExpressionAttributeValues = %v, want :v the type name N", values)
	}
	if v, _ := values[":v1"].(map[string]any); v["N"] != "999" {
		t.Errorf("ExpressionAttributeValues = %v", values)
	}
	item, _ := req["Item"].(map[string]any)
	if v, _ := item["tokens"].(map[string]any); v["N"] != "2.5" {
		t.Errorf("Item tokens = %v, want N 2.5", item["tokens"])
	}
}

func TestRequestShapes(t *testing.T) {
	t.Parallel()
	f := &fakeDynamo{status: 200, body: `{}`}
	s, _ := fakeStore(t, f)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		do   func() error
		want map[string]any
	}{
		{"get is consistent", func() error { _, err := s.Get(ctx, "x"); return err },
			map[string]any{"ConsistentRead": true, "TableName": "ctl"}},
		{"put always has no condition", func() error { return s.Put(ctx, store.Item{store.PK: "x"}, store.Always()) },
			map[string]any{"ConditionExpression": nil, "ReturnValuesOnConditionCheckFailure": nil}},
		{"put if absent", func() error { return s.Put(ctx, store.Item{store.PK: "x"}, store.IfAbsent()) },
			map[string]any{"ConditionExpression": "attribute_not_exists(#pk)"}},
		{"delete if present", func() error { return s.Delete(ctx, "x", store.IfPresent()) },
			map[string]any{"ConditionExpression": "attribute_exists(#pk)", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
		{"delete if equals", func() error { return s.Delete(ctx, "x", store.IfEquals("status", "open")) },
			map[string]any{"ConditionExpression": "#a = :v"}},
		{"scan prefix", func() error {
			for _, err := range s.Scan(ctx, store.ScanQuery{Prefix: "rl#", PageSize: 25}) {
				return err
			}
			return nil
		}, map[string]any{"FilterExpression": "begins_with(#pk, :prefix)", "ConsistentRead": true, "Limit": float64(25)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
			req := f.last()
			for k, want := range tc.want {
				if got := req[k]; got != want {
					t.Errorf("%s = %#v, want %#v", k, got, want)
				}
			}
		})
	}
}

// The answers a transaction can get that only DynamoDB (or an endpoint
// without transactions) gives: each in the class koshactl acts on.
func TestTransactionAnswers(t *testing.T) {
	t.Parallel()
	change := func() store.Change {
		tok, _ := store.NewWriteID()
		return store.Change{Token: tok, Proof: "audit#1", Ops: []store.Op{
			store.PutOp(store.Item{store.PK: "breaker#a", store.WriteIDAttr: tok}, store.IfAbsent()),
			store.PutOp(store.Item{store.PK: "audit#1", store.WriteIDAttr: tok}, store.IfAbsent()),
		}}
	}
	canceled := func(reasons string) string {
		return `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction canceled","CancellationReasons":` + reasons + `}`
	}
	for _, tc := range []struct {
		name, body string
		want       error
		text       string
	}{
		{"no transactions at this endpoint", `{"__type":"com.amazon.coral.service#UnknownOperationException"}`, nil,
			"does not serve TransactWriteItems, which koshactl writes every change with: point the context at DynamoDB, DynamoDB Local, LocalStack or moto"},
		{"a concurrent transaction on an item", canceled(`[{"Code":"None"},{"Code":"TransactionConflict","Message":"conflict"}]`), store.ErrThrottled, "nothing was written"},
		{"a refused condition names the stored item", canceled(`[{"Code":"ConditionalCheckFailed","Item":{"pk":{"S":"breaker#a"},"write_id":{"S":"theirs"}}},{"Code":"None"}]`),
			store.ErrConditionFailed, ""},
		{"a validation error", canceled(`[{"Code":"ValidationError","Message":"bad"},{"Code":"None"}]`), store.ErrInvalidItem, "bad"},
		{"a token reused with other content", `{"__type":"com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException","message":"mismatch"}`, store.ErrInvalidItem, "another change under its token"},
		{"the same token still in flight", `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionInProgressException","message":"in progress"}`, store.ErrUnavailable, "still applying"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := &fakeDynamo{status: 400, body: tc.body}
			s, _ := fakeStore(t, fd)
			c := change()
			err := s.Transact(context.Background(), c)
			if got := fd.last()["ClientRequestToken"]; got != c.Token {
				t.Errorf("ClientRequestToken = %v, want the change's token %s", got, c.Token)
			}
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Transact: %v; want %v mentioning %q", err, tc.want, tc.text)
			}
			var tce *store.TxConflictError
			if errors.As(err, &tce) {
				ce, ok := tce.On("breaker#a")
				if !ok || ce.Current.WriteID() != "theirs" || len(tce.Conflicts) != 1 {
					t.Errorf("conflicts %+v: want breaker#a alone, with the stored item", tce.Conflicts)
				}
			}
		})
	}
}
