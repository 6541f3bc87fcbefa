package forceopen_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
)

// BenchmarkWholeProcessVersusAWSCLI runs, side by side in one loop, the whole
// koshactl process forcing a breaker open (context resolution, read, two
// conditional writes: the override and its audit record) and the AWS CLI
// putting the same item, both against one dynalite server. It reports each
// one's median wall time per process and the ratio aws/koshactl.
func BenchmarkWholeProcessVersusAWSCLI(b *testing.B) {
	awsBin, err := exec.LookPath("aws")
	if err != nil {
		b.Fatal("the AWS CLI is the peer of this benchmark: install it (make bench does: apt-get install awscli)")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "koshactl")
	build := exec.CommandContext(b.Context(), "go", "build", "-o", bin, "github.com/kosha-platform/koshactl/cmd/koshactl") //nolint:gosec // G204: builds into the benchmark's temp dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build koshactl: %v\n%s", err, out)
	}
	endpoint := dynalite.Start(b)
	if _, err := dynamo.NewFromConfig(dynalite.Config(b, endpoint), "kosha-control").Init(context.Background()); err != nil {
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
	item := `{"pk":{"S":"breaker#openai"},"state":{"S":"forced_open"},"reason":{"S":"bench"},"actor":{"S":"bench@host"},` +
		`"created_at":{"N":"1795978800000"},"expires_at":{"N":"1795980600000"},"ttl":{"N":"1795980600"},"version":{"N":"1"}}`
	run := func(name string, args ...string) time.Duration {
		cmd := exec.CommandContext(b.Context(), name, args...) //nolint:gosec // G204: the benchmark runs the two programs it compares
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return d
	}
	var kosha, awsd []time.Duration
	b.ResetTimer()
	for b.Loop() {
		kosha = append(kosha, run(bin, "breaker", "force-open", "openai", "--reason", "bench", "--for", "30m", "--overwrite"))
		awsd = append(awsd, run(awsBin, "dynamodb", "put-item", "--endpoint-url", endpoint, "--table-name", "kosha-control", "--item", item))
	}
	mk, ma := median(kosha), median(awsd)
	b.ReportMetric(float64(mk.Microseconds())/1000, "koshactl-ms")
	b.ReportMetric(float64(ma.Microseconds())/1000, "aws-ms")
	b.ReportMetric(float64(ma)/float64(mk), "aws/koshactl")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
