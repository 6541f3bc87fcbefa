package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// endpoint is the moto server every test of the package shares; each test
// works on its own table.
var endpoint string

func TestMain(m *testing.M) { moto.RunMain(m, &endpoint) }

func TestConformance(t *testing.T) {
	t.Parallel()
	opener := func(t *testing.T) store.Store { return dynamotest.NewStore(t, endpoint) }
	storetest.Run(t, opener)
	storetest.RunCapabilities(t, opener)
}

func TestInitIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), dynamotest.TableName(t))
	first, err := s.Init(ctx)
	if err != nil {
		t.Fatalf("first Init: %v", err)
	}
	if !first.Created || first.Status != "ACTIVE" {
		t.Errorf("first Init: created %v, status %q; want a new ACTIVE table", first.Created, first.Status)
	}
	// Init turns TTL on for the "ttl" attribute of the table it created.
	if first.TTL != dynamo.TTLEnabled {
		t.Errorf("first Init: TTL %q, want %q", first.TTL, dynamo.TTLEnabled)
	}
	lines := strings.Join(first.Lines(), "\n")
	for _, want := range []string{"created", s.Table(), `time to live enabled on attribute "ttl"`, endpoint} {
		if !strings.Contains(lines, want) {
			t.Errorf("first report does not mention %q:\n%s", want, lines)
		}
	}
	second, err := s.Init(ctx)
	if err != nil {
		t.Fatalf("second Init: %v", err)
	}
	if second.Created {
		t.Error("second Init claims to have created the table")
	}
	if second.TTL != dynamo.TTLAlreadyEnabled {
		t.Errorf("second Init: TTL %q, want %q", second.TTL, dynamo.TTLAlreadyEnabled)
	}
	if lines := strings.Join(second.Lines(), "\n"); !strings.Contains(lines, "already exists") {
		t.Errorf("second report does not say the table already exists:\n%s", lines)
	}
	if err := s.Put(ctx, store.Item{store.PK: "x"}, store.IfAbsent()); err != nil {
		t.Fatalf("Put after Init: %v", err)
	}
}

func TestConcurrentInitCreatesOnce(t *testing.T) {
	t.Parallel()
	cfg := moto.Config(t, endpoint)
	table := dynamotest.TableName(t)
	const n = 4
	reports := make([]dynamo.InitReport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { reports[i], errs[i] = dynamo.NewFromConfig(cfg, table).Init(context.Background()) })
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Init %d: %v", i, errs[i])
		}
		if reports[i].Created {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d concurrent Inits report creating the table, want 1", created)
	}
}

func TestInitRefusesForeignTable(t *testing.T) {
	t.Parallel()
	cfg := moto.Config(t, endpoint)
	table := dynamotest.TableName(t)
	_, err := dynamodb.NewFromConfig(cfg).CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dynamo.NewFromConfig(cfg, table).Init(context.Background())
	if err == nil || !strings.Contains(err.Error(), `single string hash key "pk"`) {
		t.Fatalf("Init on a table keyed by a number id: %v, want a refusal naming the key koshactl needs", err)
	}
}

func TestMissingTable(t *testing.T) {
	t.Parallel()
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "no-such-table")
	ctx := context.Background()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrTableMissing) {
			t.Fatalf("%s on a missing table: %v, want ErrTableMissing", op, err)
		}
		for _, want := range []string{`"no-such-table"`, "koshactl store init"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s error does not mention %s: %v", op, want, err)
			}
		}
		if errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: a missing table also matches another class: %v", op, err)
		}
	}
	_, err := s.Get(ctx, "x")
	check("Get", err)
	check("Put", s.Put(ctx, store.Item{store.PK: "x"}, store.IfAbsent()))
	check("Delete", s.Delete(ctx, "x", store.Always()))
	for _, segments := range []int{1, 3} {
		for _, err := range s.Scan(ctx, store.ScanQuery{Segments: segments}) {
			check("Scan", err)
			break
		}
	}
}

// closedEndpoint returns the URL of a loopback port nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

func TestUnreachableEndpoint(t *testing.T) {
	t.Parallel()
	dead := closedEndpoint(t)
	for _, attempts := range []int{1, 0} { // 0: the CLI's default retries
		t.Run("attempts="+strconv.Itoa(attempts), func(t *testing.T) {
			o := moto.Options(dead)
			o.MaxAttempts = attempts
			cfg, err := awsconf.Load(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			s := dynamo.NewFromConfig(cfg, "")
			_, err = s.Get(context.Background(), "breaker#db")
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("Get on a closed port: %v, want ErrUnavailable", err)
			}
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableMissing) || errors.Is(err, store.ErrCredentials) {
				t.Errorf("unreachable endpoint also matches another class: %v", err)
			}
			if !strings.Contains(err.Error(), dead) {
				t.Errorf("error does not name the endpoint %s: %v", dead, err)
			}
			if _, err := s.Init(context.Background()); !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("Init on a closed port: %v, want ErrUnavailable", err)
			}
		})
	}
}

// Issue 45: a request the client gave up on at its timeout says so,
// names the timeout and how to allow more; a transaction (one of many items
// on a slow endpoint) is told alike. The endpoint answers nothing until the
// client hangs up.
func TestRequestTimeoutIsNamedWithItsFix(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		// The body read, the server notices the client hang up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(stalled.Close)
	o := moto.Options(stalled.URL)
	o.HTTPTimeout, o.MaxAttempts = time.Second, 1
	cfg, err := awsconf.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	s := dynamo.NewFromConfig(cfg, "")
	_, getErr := s.Get(context.Background(), "breaker#db")
	txErr := s.Transact(context.Background(), store.Change{Token: "tok-1", Proof: "breaker#db",
		Ops: []store.Op{store.PutOp(store.Item{store.PK: "breaker#db", store.WriteIDAttr: "tok-1"}, store.IfAbsent())}})
	for what, err := range map[string]error{"get": getErr, "transaction": txErr} {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", what, err)
			continue
		}
		for _, want := range []string{"did not answer within the request timeout (1s)", "--request-timeout", "koshactl config set-context NAME --request-timeout"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", what, err, want)
			}
		}
	}
	if seen.Load() != 2 {
		t.Errorf("the endpoint saw %d requests, want 2 (one attempt each)", seen.Load())
	}
}

func TestMissingCredentials(t *testing.T) {
	t.Parallel()
	// A client that signs nothing, answered as DynamoDB answers it. (moto
	// cannot tell an unsigned request is DynamoDB's and answers it as S3's
	// ListBuckets, so the answer comes from a stand-in.)
	var signed atomic.Bool
	dynamoDB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		signed.Store(r.Header.Get("Authorization") != "")
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazon.coral.service#MissingAuthenticationTokenException","message":"Request is missing Authentication Token"}`)
	}))
	t.Cleanup(dynamoDB.Close)
	unsigned := dynamodb.New(dynamodb.Options{Region: moto.Region, BaseEndpoint: aws.String(dynamoDB.URL)})
	_, err := dynamo.New(unsigned, "any-table").Get(context.Background(), "x")
	if !errors.Is(err, store.ErrCredentials) {
		t.Errorf("unsigned request: %v, want ErrCredentials", err)
	}
	if signed.Load() {
		t.Error("the client without credentials signed its request")
	}
	// A credential provider that fails.
	failing := dynamodb.New(dynamodb.Options{
		Region: moto.Region, BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no credentials anywhere")
		}),
	})
	_, err = dynamo.New(failing, "any-table").Get(context.Background(), "x")
	if !errors.Is(err, store.ErrCredentials) {
		t.Errorf("failing credential provider: %v, want ErrCredentials", err)
	}
}

// An item another tool wrote with the AWS SDK, holding an attribute of each
// of DynamoDB's ten types, is read whole by Get, Scan and GetMany, and a Put
// of it as read writes every attribute back with its type.
func TestEveryAttributeTypeWrittenByTheSDK(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewStore(t, endpoint)
	raw := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	table := s.Table()
	attrs := map[string]storetest.Attr{store.PK: {Type: "S", Text: "foreign"}}
	for k, v := range storetest.EveryType {
		attrs[k] = v
	}
	storetest.PutRawDynamoDB(t, raw, table, attrs)
	want := storetest.RawItem(t, attrs)
	check := func(what string, got store.Item) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d attributes, want %d: %v", what, len(got), len(want), got)
		}
		for k, w := range want {
			if storetest.TypeOf(got[k]) != storetest.TypeOf(w) || !store.Equal(got[k], w) {
				t.Errorf("%s: %s = %#v, want %#v", what, k, got[k], w)
			}
		}
	}
	got, err := s.Get(t.Context(), "foreign")
	if err != nil {
		t.Fatalf("Get of an item with every attribute type: %v", err)
	}
	check("Get", got)
	for it, err := range s.Scan(t.Context(), store.ScanQuery{Prefix: "for"}) {
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		check("Scan", it)
	}
	many, err := store.GetMany(t.Context(), s, []string{"foreign"})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	check("GetMany", many["foreign"])

	if err := s.Put(t.Context(), got, store.IfEquals("t_m", got["t_m"])); err != nil {
		t.Fatalf("Put of the item as read: %v", err)
	}
	out, err := raw.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{
		store.PK: &types.AttributeValueMemberS{Value: "foreign"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := map[string]string{"t_s": "S", "t_n": "N", "t_b": "B", "t_bool": "BOOL", "t_null": "NULL", "t_l": "L",
		"t_m": "M", "t_ss": "SS", "t_ns": "NS", "t_bs": "BS"}
	for k, typ := range wantTypes {
		if got := strings.TrimPrefix(fmt.Sprintf("%T", out.Item[k]), "*types.AttributeValueMember"); got != typ {
			t.Errorf("after a Put of the item as read, %s is of type %s, want %s", k, got, typ)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "")
	want := `dynamodb table "kosha-control" at ` + endpoint
	if s.Describe() != want {
		t.Errorf("Describe = %q, want %q", s.Describe(), want)
	}
	cfg := aws.Config{Region: "eu-west-1"}
	if got := dynamo.NewFromConfig(cfg, "ops").Describe(); got != `dynamodb table "ops" in eu-west-1` {
		t.Errorf("Describe = %q", got)
	}
}

func TestParallelScanStopsEarlyWithoutLeaks(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewStore(t, endpoint)
	ctx := context.Background()
	for i := range 60 {
		if err := s.Put(ctx, store.Item{store.PK: fmt.Sprintf("p#%02d", i)}, store.Always()); err != nil {
			t.Fatal(err)
		}
	}
	// Stop after the first item many times: if abandoned segments leaked
	// goroutines blocked on sending, the race detector's goroutine limit or
	// the final full scan would show it.
	for range 50 {
		for _, err := range s.Scan(ctx, store.ScanQuery{Prefix: "p#", Segments: 8, PageSize: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	var got []string
	for it, err := range s.Scan(ctx, store.ScanQuery{Prefix: "p#", Segments: 8, PageSize: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.PK())
	}
	if len(got) != 60 || len(slices.Compact(slices.Sorted(slices.Values(got)))) != 60 {
		t.Errorf("full parallel scan found %d items (%d distinct), want 60", len(got), len(slices.Compact(slices.Sorted(slices.Values(got)))))
	}
}

func BenchmarkPutGet(b *testing.B) {
	s := dynamotest.NewStore(b, endpoint)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pk := "rl#client-" + strconv.Itoa(i%64)
		i++
		if err := s.Put(ctx, store.Item{store.PK: pk, "tokens": 19.5, "updated_at": int64(i)}, store.Always()); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, pk); err != nil {
			b.Fatal(err)
		}
	}
}
