package moto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func get(t *testing.T, url string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestStartServesOnLoopback(t *testing.T) {
	endpoint := Start(t)
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint = %q, want http://127.0.0.1:PORT", endpoint)
	}
	code, _, err := get(t, endpoint+"/moto-api/")
	if err != nil {
		t.Fatalf("GET %s/moto-api/: %v", endpoint, err)
	}
	if code != http.StatusOK {
		t.Fatalf("GET %s/moto-api/ = %d, want 200", endpoint, code)
	}
}

func createTable(t *testing.T, client *dynamodb.Client, name string) {
	t.Helper()
	_, err := client.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
}

// TestTwoServersRunSideBySide: each server has its own port and its own
// state.
func TestTwoServersRunSideBySide(t *testing.T) {
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("both servers got endpoint %s", a)
	}
	createTable(t, dynamodb.NewFromConfig(Config(t, a)), "only-on-a")
	out, err := dynamodb.NewFromConfig(Config(t, b)).ListTables(t.Context(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables on %s: %v", b, err)
	}
	if len(out.TableNames) != 0 {
		t.Errorf("server %s sees tables %v created on %s", b, out.TableNames, a)
	}
}

func TestStartMainServesUntilStopped(t *testing.T) {
	endpoint, stop, err := StartMain()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(t, endpoint+"/moto-api/"); err != nil {
		t.Fatalf("GET before stop: %v", err)
	}
	stop()
	stop() // idempotent
	if _, _, err := get(t, endpoint+"/moto-api/"); err == nil {
		t.Fatalf("GET after stop succeeded")
	}
}

func TestFindServerExplainsHowToInstall(t *testing.T) {
	t.Setenv(EnvServer, "")
	t.Setenv("PATH", t.TempDir())
	_, err := FindServer()
	if err == nil {
		t.Fatal("FindServer found moto_server on an empty PATH")
	}
	for _, want := range []string{"moto_server", EnvServer, "make test-deps", "pip install 'moto[server]==" + Version + "'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q spans several lines", err)
	}
}

func TestFindServerRefusesAMissingOverride(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "moto_server")
	t.Setenv(EnvServer, missing)
	_, err := FindServer()
	if err == nil {
		t.Fatalf("FindServer accepted %s=%s, which does not exist", EnvServer, missing)
	}
	for _, want := range []string{EnvServer, missing, "unset it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestConfigSignsForMoto(t *testing.T) {
	endpoint := Start(t)
	cfg := Config(t, endpoint)
	if cfg.Region != Region {
		t.Errorf("region = %q, want %q", cfg.Region, Region)
	}
	out, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables on moto: %v", err)
	}
	if len(out.TableNames) != 0 {
		t.Errorf("a fresh moto has tables %v", out.TableNames)
	}
}

// TestServesTransactWriteItems: the reason the tests run on moto. A
// transaction whose condition fails writes nothing and names the failing
// item, as DynamoDB does.
func TestServesTransactWriteItems(t *testing.T) {
	client := dynamodb.NewFromConfig(Config(t, Start(t)))
	createTable(t, client, "tx")
	item := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
	}
	write := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String("tx"), Item: item(pk),
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}}
	}
	if _, err := client.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{write("a")},
	}); err != nil {
		t.Fatalf("TransactWriteItems a: %v", err)
	}
	_, err := client.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{write("b"), write("a")},
	})
	var canceled *types.TransactionCanceledException
	if !errors.As(err, &canceled) {
		t.Fatalf("TransactWriteItems b, a (a exists) = %v, want TransactionCanceledException", err)
	}
	codes := make([]string, len(canceled.CancellationReasons))
	for i, r := range canceled.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	if want := []string{"None", "ConditionalCheckFailed"}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("cancellation reasons = %v, want %v", codes, want)
	}
	got, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String("tx"), Key: item("b"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem b: %v", err)
	}
	if got.Item != nil {
		t.Errorf("the canceled transaction wrote b: %v", got.Item)
	}
}

// TestConcurrentTransactionsAreIsolated: transactions sent at once on one
// item are applied one at a time, as DynamoDB applies them: exactly one of
// several conditional transactions on the same version wins, and none is
// answered with a server error (moto's own server fails them with HTTP
// 500 under concurrency; the harness serves its requests in turn).
func TestConcurrentTransactionsAreIsolated(t *testing.T) {
	client := dynamodb.NewFromConfig(Config(t, Start(t)))
	createTable(t, client, "race")
	// A table of a few thousand items, so that moto's copy of it takes
	// long enough for requests to overlap.
	for b := range 80 {
		var puts []types.WriteRequest
		for i := range 25 {
			puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("filler#%d#%d", b, i)}}}})
		}
		if _, err := client.BatchWriteItem(t.Context(), &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{"race": puts}}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		raceOnce(t, client, round)
	}
}

func raceOnce(t *testing.T, client *dynamodb.Client, round int) {
	const writers = 16
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			_, err := client.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{
				TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String("race"), ConditionExpression: aws.String("attribute_not_exists(pk)"),
						Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("lever#%d", round)}}}},
					{Put: &types.Put{TableName: aws.String("race"),
						Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("record#%d#%d", round, i)}}}},
				}})
			errs <- err
		}()
	}
	won := 0
	for range writers {
		err := <-errs
		var canceled *types.TransactionCanceledException
		switch {
		case err == nil:
			won++
		case !errors.As(err, &canceled):
			t.Errorf("a concurrent transaction failed with %v, want applied or canceled", err)
		}
	}
	if won != 1 {
		t.Errorf("round %d: %d of %d transactions on one absent item won, want exactly 1", round, won, writers)
	}
}

// TestSurvivesAbortedRequests: a client that gives up mid-request (a
// canceled context, a scan stopped early) must not kill the server the rest
// of the package's tests share.
func TestSurvivesAbortedRequests(t *testing.T) {
	endpoint := Start(t)
	addr := strings.TrimPrefix(endpoint, "http://")
	for range 3 {
		var d net.Dialer
		c, err := d.DialContext(t.Context(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-amz-json-1.0\r\n"+
			"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{\"Li", addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A request after the aborts is answered: the server is still up.
	if _, err := dynamodb.NewFromConfig(Config(t, endpoint)).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables after aborted requests: %v", err)
	}
}

// TestOutputKeepsTheBannerNotTheAccessLog: what a dead server shows is its
// banner and errors, not one line per request of the tests before.
func TestOutputKeepsTheBannerNotTheAccessLog(t *testing.T) {
	s, err := Launch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	client := dynamodb.NewFromConfig(Config(t, s.Endpoint))
	for range 3 {
		if _, err := client.ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
			t.Fatal(err)
		}
	}
	out := s.Output()
	if !strings.Contains(out, runningPrefix+s.motoURL) {
		t.Errorf("output lacks the banner %q:\n%s", runningPrefix+s.motoURL, out)
	}
	if strings.Contains(out, "HTTP/1.1\"") {
		t.Errorf("output keeps the access log:\n%s", out)
	}
}

func TestLogBufferDropsAccessLinesAcrossWrites(t *testing.T) {
	var b logBuffer
	for _, p := range []string{
		" * Running on http://127.0.0.1:5000\n127.0.0.1 - - [02/Dec/2026 15:24:07] \"GET /mo",
		"to-api/ HTTP/1.1\" 200 -\nTraceback (most recent call last):\n",
		"  boom",
	} {
		if _, err := b.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	want := " * Running on http://127.0.0.1:5000\nTraceback (most recent call last):\n  boom"
	if got := b.String(); got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
}

func TestLogBufferIsBounded(t *testing.T) {
	var b logBuffer
	line := strings.Repeat("x", 1023) + "\n"
	for range 2 * maxLog / len(line) {
		if _, err := b.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Write([]byte(strings.Repeat("y", 2*maxLog))); err != nil {
		t.Fatal(err)
	}
	if n := len(b.String()); n > maxLog+len(line) {
		t.Errorf("kept %d bytes, want at most about %d", n, maxLog)
	}
}

// TestLaunchOnATakenPortIsNotFooledByItsOwner: when another server (another
// test's moto) takes the port between freePort and moto's bind, and answers
// moto's API, the launch must still see that its own process failed to bind,
// and report errPortTaken so Launch tries another port.
func TestLaunchOnATakenPortIsNotFooledByItsOwner(t *testing.T) {
	bin, err := FindServer()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	owner := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<html>moto</html>\n")
	})}
	go func() { _ = owner.Serve(ln) }()
	t.Cleanup(func() { _ = owner.Close() })

	s, err := launchOn(t.Context(), bin, ln.Addr().(*net.TCPAddr).Port)
	if err == nil {
		_ = s.Stop()
		t.Fatalf("launch on a port another server holds succeeded: its address %s is that server's", s.motoURL)
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("launch on a taken port: %v, want errPortTaken", err)
	}
}

// TestConditionalWritesOfOneItemAreAtomic: of many concurrent writes of one
// item, each conditional on the version it read, exactly one per version
// succeeds, as on DynamoDB (the front serializes moto's DynamoDB requests).
func TestConditionalWritesOfOneItemAreAtomic(t *testing.T) {
	client := dynamodb.NewFromConfig(Config(t, Start(t)))
	createTable(t, client, "cas")
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}
	put := func(version int) error {
		_, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{
			TableName: aws.String("cas"),
			Item: map[string]types.AttributeValue{"pk": key["pk"],
				"v": &types.AttributeValueMemberN{Value: fmt.Sprint(version + 1)}},
			ConditionExpression:       aws.String("attribute_not_exists(pk) OR v = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: fmt.Sprint(version)}},
		})
		return err
	}
	const writers = 16
	for version := range 5 {
		var wins atomic.Int64
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				err := put(version)
				var failed *types.ConditionalCheckFailedException
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.As(err, &failed):
					t.Errorf("PutItem: %v", err)
				}
			})
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("%d of %d concurrent writes conditional on version %d succeeded, want 1", n, writers, version)
		}
	}
}
