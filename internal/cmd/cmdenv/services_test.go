package cmdenv_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/ratelimit"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
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
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	st := sqlitetest.NewStore(t)
	env := &cmdenv.Env{Name: "local", Context: config.BuiltinLocal(), Store: st, Clock: clk, Actor: func(context.Context) (string, error) { return "al", nil }}
	env.Kinds = builtin.For(st, clk, env.Name, env.Context)
	levers, log := env.Levers(), env.Audit()
	if env.Levers() != levers || env.Audit() != log {
		t.Fatal("lever service or audit log built twice")
	}
	ov, err := cmdenv.Kind[*breaker.Overrides](env, "breaker")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := cmdenv.Kind[*breaker.Overrides](env, "breaker"); again != ov || env.LimitsSource() != "LLD defaults" {
		t.Fatal("overrides built twice, or the limits' source misnamed")
	}
	if _, err := env.Guard().Plan(t.Context(), breaker.ForceOpen("x", breaker.ForceParams{For: time.Hour}, "openai")); err != nil {
		t.Fatal(err)
	}
	if _, err := levers.Change(t.Context(), breaker.ForceOpen("x", breaker.ForceParams{For: time.Hour}, "openai")); err != nil {
		t.Fatal(err)
	}
	o, err := ov.Get(t.Context(), "openai")
	if err != nil || !o.CreatedAt.Equal(clk.Now()) || o.Actor != "al" {
		t.Fatalf("override %+v, %v: want it stamped by the Env's clock %s, by its actor", o, err, clk.Now())
	}
	bad := &config.Context{Store: env.Context.Store, RateLimit: config.RateLimitConfig{Capacity: -1}}
	if _, err := cmdenv.Kind[*ratelimit.Buckets](&cmdenv.Env{Name: "bad", Context: bad, Kinds: builtin.For(st, clk, "bad", bad)}, "ratelimit"); exitcode.Of(err) != exitcode.Usage ||
		!strings.Contains(err.Error(), "--ratelimit-capacity") {
		t.Fatalf("bad limits: %v", err)
	}
	ch, err := gaugeenv.Choice(env, "http://127.0.0.1:9/metrics")
	if err != nil || ch.Description != "prometheus http://127.0.0.1:9/metrics" {
		t.Fatalf("choice %+v, %v", ch, err)
	}
	if _, err := gaugeenv.Source(t.Context(), env, "http://127.0.0.1:9/metrics"); err != nil {
		t.Fatal(err)
	}
}
