package dynalite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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

func TestStartServesDynamoDBOnLoopback(t *testing.T) {
	endpoint := Start(t)
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint = %q, want http://127.0.0.1:PORT", endpoint)
	}
	code, body, err := get(t, endpoint+"/")
	if err != nil {
		t.Fatalf("GET %s: %v", endpoint, err)
	}
	if code != http.StatusOK || !strings.HasPrefix(body, "healthy") {
		t.Fatalf("GET %s = %d %q, want 200 healthy", endpoint, code, body)
	}
}

func TestTwoServersRunSideBySide(t *testing.T) {
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("both servers got endpoint %s", a)
	}
	for _, ep := range []string{a, b} {
		if _, _, err := get(t, ep+"/"); err != nil {
			t.Errorf("GET %s: %v", ep, err)
		}
	}
}

func TestStartMainServesUntilStopped(t *testing.T) {
	endpoint, stop, err := StartMain()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(t, endpoint+"/"); err != nil {
		t.Fatalf("GET before stop: %v", err)
	}
	stop()
	stop() // idempotent
	if _, _, err := get(t, endpoint+"/"); err == nil {
		t.Fatalf("GET after stop succeeded")
	}
}

func TestFindCLIExplainsHowToInstall(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "internal", "pkg")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := FindCLI(sub)
	if err == nil {
		t.Fatal("FindCLI found dynalite in an empty repository")
	}
	for _, want := range []string{"make test", "npm ci --prefix tools/dynalite", root} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestFindCLIWalksUpToGoMod(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(root, filepath.FromSlash(CLIPath))
	if err := os.MkdirAll(filepath.Dir(cli), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cli, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := FindCLI(deep)
	if err != nil {
		t.Fatal(err)
	}
	if got != cli {
		t.Errorf("FindCLI = %s, want %s", got, cli)
	}
}

func TestConfigSignsForDynalite(t *testing.T) {
	endpoint := Start(t)
	cfg := Config(t, endpoint)
	out, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables on dynalite: %v", err)
	}
	if len(out.TableNames) != 0 {
		t.Errorf("a fresh dynalite has tables %v", out.TableNames)
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

// TestLaunchOnATakenPortIsNotFooledByItsOwner: when another server (another
// test's dynalite) takes the port between freePort and dynalite's bind, and
// answers the health page, the launch must still see that its own process
// failed to bind, and report errPortTaken so Launch tries another port.
func TestLaunchOnATakenPortIsNotFooledByItsOwner(t *testing.T) {
	cli, err := FindCLI(".")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	owner := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "healthy: dynalite\n")
	})}
	go func() { _ = owner.Serve(ln) }()
	t.Cleanup(func() { _ = owner.Close() })

	s, err := launchOn(t.Context(), node, cli, ln.Addr().(*net.TCPAddr).Port)
	if err == nil {
		_ = s.Stop()
		t.Fatalf("launch on a port another server holds succeeded: its endpoint %s is that server's", s.Endpoint)
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("launch on a taken port: %v, want errPortTaken", err)
	}
}
