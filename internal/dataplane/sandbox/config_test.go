package sandbox_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
)

func TestDefaultConfigIsTheLLD(t *testing.T) {
	t.Parallel()
	cfg := sandbox.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if cfg.Instances != 4 || cfg.Listen != "127.0.0.1:8787" || cfg.OverrideRefresh != 5*time.Second ||
		cfg.RateLimit.Capacity != 20 || cfg.RateLimit.RefillPerSecond != 1 || cfg.Resilience.MaxInFlight != 64 ||
		cfg.Tools[sandbox.ToolSearchKnowledgeBase].Budget != 8*time.Second || cfg.ChaosEnabled || cfg.Traffic.RPS != 0 {
		t.Errorf("defaults drift from the LLD: %+v", cfg)
	}
	for _, p := range sandbox.Profiles() {
		ds, err := sandbox.Profile(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		c := sandbox.DefaultConfig()
		c.Downstreams = ds
		if err := c.Validate(); err != nil {
			t.Errorf("profile %s does not validate: %v", p.Name, err)
		}
	}
	if _, err := sandbox.Profile("chaotic"); !errors.Is(err, sandbox.ErrInvalidConfig) {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestConfigValidateNamesEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := sandbox.DefaultConfig()
	cfg.Instances = 0
	cfg.TimeScale = 0.5
	cfg.Principals = append(cfg.Principals, sandbox.Principal{Token: "agent-token", Client: "bad id", Role: "root"})
	ds := cfg.Downstreams[sandbox.OpenAI]
	ds.ErrorRate, ds.TimeoutRate = 0.8, 0.5
	ds.Outages = []sandbox.Outage{{Every: time.Second, For: 2 * time.Second, Fault: chaos.FaultError}}
	cfg.Downstreams[sandbox.OpenAI] = ds
	cfg.Traffic.RPS = 5
	cfg.Traffic.Mix = map[string]float64{"delete_everything": 1}
	err := cfg.Validate()
	if !errors.Is(err, sandbox.ErrInvalidConfig) {
		t.Fatalf("Validate = %v", err)
	}
	for _, want := range []string{"instances 0", "time scale 0.5", "reuses another principal's token", "bad id", `role "root"`,
		"add up to 1.3", "0 < for", `"delete_everything"`, "needs a tool mix"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

// The ignore-overrides test knob names instances of this fleet, once each,
// and reads from the file as it is written.
func TestIgnoreOverridesKnob(t *testing.T) {
	t.Parallel()
	cfg := sandbox.DefaultConfig()
	cfg.IgnoreOverrides = []int{5, 2, 2, 0}
	err := cfg.Validate()
	for _, want := range []string{"ignore-overrides instance 5: the fleet is gw-1..gw-4", "instance 2 is named twice", "ignore-overrides instance 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to mention %q", err, want)
		}
	}
	got := sandbox.DefaultConfig()
	if err := got.DecodeFile([]byte("ignore-overrides: [3]\n"), ""); err != nil || !reflect.DeepEqual(got.IgnoreOverrides, []int{3}) || got.Validate() != nil {
		t.Errorf("decode ignore-overrides: %v, %v", err, got.IgnoreOverrides)
	}
	b, err := got.MarshalFile()
	if err != nil || !strings.Contains(string(b), "ignore-overrides:") {
		t.Errorf("MarshalFile does not print the knob: %v\n%s", err, b)
	}
}

func TestConfigFileRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := sandbox.DefaultConfig()
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileFlaky)
	cfg.Profile = sandbox.ProfileFlaky
	cfg.ChaosEnabled = true
	cfg.Traffic.RPS = 7
	b, err := cfg.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	got := sandbox.DefaultConfig()
	if err := got.DecodeFile(b, ""); err != nil {
		t.Fatalf("decode what MarshalFile wrote: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Errorf("round trip changed the config:\n got  %+v\n want %+v\nfile:\n%s", got, cfg, b)
	}
}

func TestConfigFileOverrides(t *testing.T) {
	t.Parallel()
	cfg := sandbox.DefaultConfig()
	err := cfg.DecodeFile([]byte(`
instances: 8
profile: degraded
time-scale: 10
chaos: {enabled: true, targets: [openai]}
traffic: {rps: 3, mix: {screen_entity: 1}}
principals:
  - {token: s3cret, client: ops-9, role: operator}
downstreams:
  openai: {error-rate: 0.5, latency: {p50: 10ms, p99: 20ms}}
resilience:
  override-refresh: 2s
  breakers: {openai: {min-calls: 3, open-duration: 10s}}
  operations: {core-api/reads: {attempt-cap: 1s, max-attempts: 2}}
tools: {screen_entity: {budget: 3s}}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	oa := cfg.Downstreams[sandbox.OpenAI]
	if cfg.Instances != 8 || cfg.TimeScale != 10 || !cfg.ChaosEnabled || len(cfg.ChaosTargets) != 1 || cfg.Traffic.RPS != 3 ||
		len(cfg.Principals) != 1 || cfg.Principals[0].Client != "ops-9" || oa.ErrorRate != 0.5 || oa.Latency.P50 != 10*time.Millisecond ||
		cfg.Downstreams[sandbox.ScreeningSim].ErrorRate != 0.3 || cfg.OverrideRefresh != 2*time.Second ||
		cfg.Resilience.Dependency(sandbox.OpenAI).Breaker.MinCalls != 3 ||
		cfg.Resilience.Operation(sandbox.CoreAPI, "reads").AttemptCap != time.Second ||
		cfg.Tools[sandbox.ToolScreenEntity].Budget != 3*time.Second {
		t.Errorf("file not applied as written: %+v", cfg)
	}
	for _, bad := range []string{"instancs: 3\n", "downstreams: {redis: {error-rate: 1}}\n", "resilience: {operations: {core-api: {}}}\n",
		"tools: {search: {budget: 1s}}\n", "downstreams: {openai: {latency: {p50: fast}}}\n"} {
		c := sandbox.DefaultConfig()
		err := c.DecodeFile([]byte(bad), "")
		if !errors.Is(err, sandbox.ErrInvalidConfig) && (err == nil || !strings.Contains(err.Error(), "line")) {
			t.Errorf("%q: %v, want an invalid-config error", bad, err)
		}
	}
}

func TestTimeScaleDividesLLDDurations(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileFlaky)
	cfg.ChaosEnabled = false
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: newStore()})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Config()
	if got.OverrideRefresh != 250*time.Millisecond || got.OverridePoll != 50*time.Millisecond ||
		got.Resilience.Dependency(sandbox.OpenAI).Breaker.OpenDuration != 1500*time.Millisecond ||
		got.Resilience.Operation(sandbox.CoreAPI, "reads").AttemptCap != 100*time.Millisecond ||
		got.Tools[sandbox.ToolSearchKnowledgeBase].Budget != 400*time.Millisecond ||
		got.Downstreams[sandbox.OpenAI].Latency.P50 != 7500*time.Microsecond ||
		got.Downstreams[sandbox.OpenAI].Outages[0].Every != 6*time.Second ||
		got.RateLimit.RefillPerSecond != 1 {
		t.Errorf("scaled config: refresh %s poll %s open %s cap %s budget %s p50 %s outage every %s refill %v",
			got.OverrideRefresh, got.OverridePoll, got.Resilience.Dependency(sandbox.OpenAI).Breaker.OpenDuration,
			got.Resilience.Operation(sandbox.CoreAPI, "reads").AttemptCap, got.Tools[sandbox.ToolSearchKnowledgeBase].Budget,
			got.Downstreams[sandbox.OpenAI].Latency.P50, got.Downstreams[sandbox.OpenAI].Outages[0].Every, got.RateLimit.RefillPerSecond)
	}
	cfg.ChaosEnabled = true
	if _, err := sandbox.New(cfg, sandbox.Deps{Store: newStore(), Keys: nil}); !errors.Is(err, sandbox.ErrInvalidConfig) {
		t.Error("chaos enabled without keys was accepted")
	}
}
