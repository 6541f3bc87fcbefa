package forceopen_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
	"github.com/kosha-platform/koshactl/internal/testutil/procbench"
)

// forceOpenBench is one moto server with the control table, a context file
// pointing koshactl at it, and the environment both processes run in.
type forceOpenBench struct {
	endpoint string
	kosha    procbench.Proc
	env      []string
}

func newForceOpenBench(b *testing.B) forceOpenBench {
	b.Helper()
	dir := b.TempDir()
	bin := procbench.Build(b, "github.com/kosha-platform/koshactl/cmd/koshactl")
	endpoint := moto.Start(b)
	if _, err := dynamo.NewFromConfig(moto.Config(b, endpoint), "kosha-control").Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	conf := fmt.Sprintf("current-context: dev\ncontexts:\n  dev:\n    store:\n      dynamodb:\n        table: kosha-control\n"+
		"        region: us-east-1\n        endpoint-url: %s\n        static-credentials: true\n", endpoint)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "KOSHACTL_CONFIG="+cfg, "KOSHACTL_STATE_DIR="+filepath.Join(dir, "state"),
		"KOSHACTL_ACTOR=bench@host", "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	return forceOpenBench{
		endpoint: endpoint,
		env:      env,
		kosha: procbench.Proc{Name: "koshactl", Path: bin, Env: env,
			Args: []string{"breaker", "force-open", "openai", "--reason", "bench", "--for", "30m", "--overwrite"}},
	}
}

// BenchmarkWholeProcessVersusAWSCLI runs, side by side in one loop, the whole
// koshactl process forcing a breaker open (context resolution, read, one
// transaction: the override and its audit record) and the AWS CLI
// putting the same item, both against one moto server. It reports each
// one's median wall time per process and the ratio aws/koshactl.
func BenchmarkWholeProcessVersusAWSCLI(b *testing.B) {
	awsBin, err := exec.LookPath("aws")
	if err != nil {
		b.Fatal("the AWS CLI is the peer of this benchmark: install it (make bench does: apt-get install awscli)")
	}
	fb := newForceOpenBench(b)
	item := `{"pk":{"S":"breaker#openai"},"state":{"S":"forced_open"},"reason":{"S":"bench"},"actor":{"S":"bench@host"},` +
		`"created_at":{"N":"1795978800000"},"expires_at":{"N":"1795980600000"},"ttl":{"N":"1795980600"},"version":{"N":"1"}}`
	procbench.Compare(b, fb.kosha, procbench.Proc{Name: "aws", Path: awsBin, Env: fb.env,
		Args: []string{"dynamodb", "put-item", "--endpoint-url", fb.endpoint, "--table-name", "kosha-control", "--item", item}})
}

// BenchmarkWholeProcessVersusBareSDK runs, in turn in one loop, the same
// koshactl force-open and testdata/sdkforceopen, a Go program making the same
// DynamoDB calls with the same SDK (the consistent read, then one
// transaction of the conditional override put and the conditional audit
// put) and nothing else, both built as
// the release builds them. The ratio koshactl/sdkforceopen is what
// koshactl's start-up, config and rules cost on top of the calls;
// docs/benchmarks/startup.md.
func BenchmarkWholeProcessVersusBareSDK(b *testing.B) {
	fb := newForceOpenBench(b)
	peer := procbench.Build(b, "./testdata/sdkforceopen")
	procbench.Compare(b,
		procbench.Proc{Name: "sdkforceopen", Path: peer, Env: fb.env, Args: []string{fb.endpoint, "kosha-control", "openai"}},
		fb.kosha)
}
