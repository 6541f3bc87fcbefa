package cmdenv_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
)

// devSecretID names a Secrets Manager secret; it holds no secret itself.
const devSecretID = "kosha/chaos/dev" //nolint:gosec // G101: a secret's name, not its value

func TestKeySourceOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	full := config.ChaosConfig{SecretID: devSecretID, KeyFile: "/etc/kosha/chaos.key", KeyEnv: "MY_CHAOS_KEY"}
	awsCfg := func(context.Context) (aws.Config, error) { return aws.Config{Region: "eu-west-1"}, nil }
	dynamo := config.StoreConfig{DynamoDB: &config.DynamoDBStore{Table: "kosha-control", Region: "eu-west-1"}}
	for _, tc := range []struct {
		name    string
		chaos   config.ChaosConfig
		store   config.StoreConfig
		flag    string
		desc    string
		origin  string
		subject string
	}{
		{"flag beats everything", full, dynamo, "./ci.key", "key file ./ci.key", keys.OriginFlag, "chaos-key#file:./ci.key"},
		{"context key file", full, dynamo, "", "key file /etc/kosha/chaos.key", keys.OriginKeyFile, "chaos-key#file:/etc/kosha/chaos.key"},
		{"context env var", config.ChaosConfig{SecretID: "s", KeyEnv: "MY_CHAOS_KEY"}, dynamo, "", "environment variable MY_CHAOS_KEY", keys.OriginKeyEnv, "chaos-key#env:MY_CHAOS_KEY"},
		{"secret id", config.ChaosConfig{SecretID: devSecretID}, dynamo, "", `Secrets Manager secret "kosha/chaos/dev"`, keys.OriginSecretID, "chaos-key#kosha/chaos/dev"},
		{"secret id on a local context", config.ChaosConfig{SecretID: devSecretID}, config.StoreConfig{Local: &config.LocalStore{}}, "", `Secrets Manager secret "kosha/chaos/dev"`, keys.OriginSecretID, "chaos-key#kosha/chaos/dev"},
		{"local context", config.ChaosConfig{}, config.StoreConfig{Local: &config.LocalStore{}}, "", "local key file " + filepath.Join(dir, "chaos.key"), keys.OriginLocal, "chaos-key#local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &cmdenv.Env{Name: "ctx", Context: &config.Context{Store: tc.store, Chaos: tc.chaos}, StateDir: dir, AWSConfig: awsCfg}
			src, err := env.KeySource(ctx, tc.flag)
			if err != nil {
				t.Fatal(err)
			}
			if src.Describe() != tc.desc || src.Origin != tc.origin || src.Subject != tc.subject {
				t.Errorf("got %q from %s (%s), want %q from %s (%s)", src.Describe(), src.Origin, src.Subject, tc.desc, tc.origin, tc.subject)
			}
		})
	}
	env := &cmdenv.Env{Name: "prod", Context: &config.Context{Store: dynamo}, AWSConfig: awsCfg}
	_, err := env.KeySource(ctx, "")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "koshactl config set-context prod --chaos-secret-id ID") {
		t.Errorf("no source: %v", err)
	}
}

func TestLocalKeyIsGeneratedOnFirstUseOnly(t *testing.T) {
	ctx := context.Background()
	env := &cmdenv.Env{Name: "local", Context: config.BuiltinLocal(), StateDir: t.TempDir()}
	src, err := env.KeySource(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if staged, err := src.Existing(ctx); err != nil || len(staged) != 0 || src.GeneratedLocal() {
		t.Fatalf("Existing generated a key: %v %v", staged, err)
	}
	k, err := src.Current(ctx)
	if err != nil || !src.GeneratedLocal() {
		t.Fatalf("first use: %v, generated %v", err, src.GeneratedLocal())
	}
	if same, _ := env.KeySource(ctx, ""); same != src {
		t.Error("one Env chose its key source twice")
	}
	// The next command run resolves its own Env.
	next := &cmdenv.Env{Name: "local", Context: config.BuiltinLocal(), StateDir: env.StateDir}
	again, _ := next.KeySource(ctx, "")
	if k2, _ := again.Current(ctx); !k2.Equal(k) || again.GeneratedLocal() {
		t.Error("second use generated another key")
	}
	if staged, err := again.Existing(ctx); err != nil || len(staged) != 1 {
		t.Errorf("Existing after first use: %v %v", staged, err)
	}
}

func TestTargets(t *testing.T) {
	env := &cmdenv.Env{Name: "c", Context: &config.Context{}}
	if ts, err := env.ChaosTargets(); ts != nil || err != nil || chaos.JoinTargets(ts) != "core-api, screening-sim, openai, postgres" {
		t.Errorf("defaults: %v %v", ts, err)
	}
	env.Context.Chaos.Targets = []string{"core-api", "payments"}
	if ts, err := env.ChaosTargets(); err != nil || len(ts) != 2 || ts[1] != chaos.Target("payments") {
		t.Errorf("configured: %v %v", ts, err)
	}
	env.Context.Chaos.Targets = []string{"Bad_Target"}
	if _, err := env.ChaosTargets(); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--chaos-targets") {
		t.Errorf("malformed: %v", err)
	}
}

// An Env builds each domain service once, on its clock.
func TestEnvBuildsEachServiceOnce(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	env := &cmdenv.Env{Name: "local", Context: config.BuiltinLocal(), Store: sqlitetest.NewStore(t), Clock: clk}
	ov, log := env.Overrides(), env.Audit()
	if env.Overrides() != ov || env.Audit() != log {
		t.Fatal("overrides or audit log built twice")
	}
	b, err := env.Buckets()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := env.Buckets(); again != b || env.LimitsSource() != "LLD defaults" {
		t.Fatal("buckets built twice, or the limits' source misnamed")
	}
	if _, _, err := env.Overrides().WithLog(env.Audit()).Force(t.Context(), breaker.ForceRequest{Dependency: "openai", Reason: "x", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	o, err := env.Overrides().Get(t.Context(), "openai")
	if err != nil || !o.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("override %+v, %v: want it stamped by the Env's clock %s", o, err, clk.Now())
	}
	env.Context = &config.Context{Store: env.Context.Store, RateLimit: config.RateLimitConfig{Capacity: -1}}
	if _, err := (&cmdenv.Env{Name: "bad", Context: env.Context}).Buckets(); exitcode.Of(err) != exitcode.Usage ||
		!strings.Contains(err.Error(), "--ratelimit-capacity") {
		t.Fatalf("bad limits: %v", err)
	}
	ch, err := env.GaugeChoice("http://127.0.0.1:9/metrics")
	if err != nil || ch.Description != "prometheus http://127.0.0.1:9/metrics" {
		t.Fatalf("choice %+v, %v", ch, err)
	}
	if _, err := env.GaugeSource(t.Context(), "http://127.0.0.1:9/metrics"); err != nil {
		t.Fatal(err)
	}
}
