package sandbox_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sbx "github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// The sandbox on a DynamoDB context (a moto endpoint): overrides and
// rate-limit buckets live in the table, and the CLI's force-open reaches
// every instance through it.
func TestSandboxOnDynamoDBContext(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	cli := clitest.New(t, clitest.Parallel())
	cli.UseDynamoDB(endpoint, "kosha-control")
	cli.MustRun(0, "store", "init")
	cli.Clock.Set(time.Now())

	addrFile := filepath.Join(t.TempDir(), "url")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() {
		done <- cli.RunContext(ctx, "sandbox", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--time-scale", "20")
	}()
	var url string
	wait.Until(t, "the sandbox serving", func() bool {
		select {
		case r := <-done:
			t.Fatalf("sandbox exited early: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		default:
		}
		b, err := os.ReadFile(addrFile)
		url = strings.TrimSpace(string(b))
		return err == nil && url != ""
	})
	client := &http.Client{Timeout: wait.Ceiling}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_service_health"}}`)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+sbx.PathMCP, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer agent-token")
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("tool call through a DynamoDB rate limit: %v %v", err, resp)
	}
	_ = resp.Body.Close()
	if out := cli.MustRun(0, "ratelimit", "get", "agent-1").Stdout; !strings.Contains(out, "agent-1") {
		t.Errorf("the take left no bucket in the table: %s", out)
	}

	cli.MustRun(0, "breaker", "force-open", "screening-sim", "--reason", "dynamo drill", "--for", "10m")
	wait.Until(t, "screening-sim forced on every instance", func() bool {
		st, err := fetchStatus(client, url)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range st.Instances {
			for _, b := range in.Breakers {
				if b.Dependency == sbx.ScreeningSim && (b.Value != 3 || b.OverrideReason != "dynamo drill") {
					return false
				}
			}
		}
		return len(st.Instances) == 4
	})
	cancel()
	if r := <-done; r.Code != 0 || !strings.Contains(r.Stdout, "context dev (dynamodb") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
