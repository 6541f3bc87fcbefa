package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
)

// Every setting the file has, changed from its default, comes back from
// MarshalFile through DecodeFile onto the defaults.
func TestEverySettingRoundTripsThroughTheFile(t *testing.T) {
	for name, change := range map[string]func(*sandbox.Config){
		"instances":     func(c *sandbox.Config) { c.Instances = 9 },
		"listen":        func(c *sandbox.Config) { c.Listen = "127.0.0.1:9999" },
		"allowed-hosts": func(c *sandbox.Config) { c.AllowedHosts = []string{"sandbox.lan", "10.0.0.5"} },
		"profile": func(c *sandbox.Config) {
			c.Profile = sandbox.ProfileDegraded
			c.Downstreams, _ = sandbox.Profile(sandbox.ProfileDegraded)
		},
		"time-scale":            func(c *sandbox.Config) { c.TimeScale = 20 },
		"chaos.enabled":         func(c *sandbox.Config) { c.ChaosEnabled = true },
		"chaos.targets":         func(c *sandbox.Config) { c.ChaosTargets = []chaos.Target{"openai", "core-api"} },
		"traffic.rps":           func(c *sandbox.Config) { c.Traffic.RPS = 2.5 },
		"traffic.clients":       func(c *sandbox.Config) { c.Traffic.Clients = 3 },
		"traffic.max-in-flight": func(c *sandbox.Config) { c.Traffic.MaxInFlight = 12 },
		"traffic.mix":           func(c *sandbox.Config) { c.Traffic.Mix = map[string]float64{sandbox.ToolScreenEntity: 1} },
		"principals": func(c *sandbox.Config) {
			c.Principals = []sandbox.Principal{{Token: "t", Client: "c-1", Role: sandbox.RoleAgent}}
		},
		"downstreams.latency": func(c *sandbox.Config) {
			setDS(c, func(p *sandbox.DownstreamProfile) {
				p.Latency = sandbox.Latency{P50: time.Millisecond, P99: 3 * time.Millisecond}
			})
		},
		"downstreams.error-rate":   func(c *sandbox.Config) { setDS(c, func(p *sandbox.DownstreamProfile) { p.ErrorRate = 0.25 }) },
		"downstreams.timeout-rate": func(c *sandbox.Config) { setDS(c, func(p *sandbox.DownstreamProfile) { p.TimeoutRate = 0.125 }) },
		"downstreams.reset-rate":   func(c *sandbox.Config) { setDS(c, func(p *sandbox.DownstreamProfile) { p.ResetRate = 0.5 }) },
		"downstreams.outages": func(c *sandbox.Config) {
			setDS(c, func(p *sandbox.DownstreamProfile) {
				p.Outages = []sandbox.Outage{{Every: time.Minute, For: time.Second, Offset: 2 * time.Second, Fault: chaos.FaultLatency, Ms: 40}}
			})
		},
		"resilience.max-in-flight":    func(c *sandbox.Config) { c.Resilience.MaxInFlight = 7 },
		"resilience.override-refresh": func(c *sandbox.Config) { c.OverrideRefresh = 2 * time.Second },
		"resilience.override-poll":    func(c *sandbox.Config) { c.OverridePoll = 300 * time.Millisecond },
		"resilience.breakers": func(c *sandbox.Config) {
			b := c.Resilience.Dependency(sandbox.OpenAI).Breaker
			b.WindowSize, b.MinCalls, b.FailureRate, b.OpenDuration, b.Probes = 30, 4, 0.25, 7*time.Second, 2
		},
		"resilience.operations": func(c *sandbox.Config) {
			o := c.Resilience.Operation(sandbox.CoreAPI, "writes")
			o.AttemptCap, o.MaxAttempts, o.Bulkhead, o.BulkheadWait, o.Margin, o.BaseDelay, o.MaxDelay = time.Second, 2, 3, time.Millisecond, 2*time.Millisecond, 3*time.Millisecond, 4*time.Millisecond
		},
		"tools": func(c *sandbox.Config) {
			c.Tools[sandbox.ToolRaiseDispute] = sandbox.ToolSettings{Budget: 3 * time.Second, MinBudget: time.Second}
		},
		"defer-retry-after":      func(c *sandbox.Config) { c.DeferRetryAfter = 11 * time.Second },
		"audit":                  func(c *sandbox.Config) { c.Audit = sandbox.AuditSettings{Interval: 3 * time.Second, MaxPerInterval: 4} },
		"emf.file":               func(c *sandbox.Config) { c.EMF.File = "state.emf.jsonl" },
		"emf.namespace":          func(c *sandbox.Config) { c.EMF.Namespace = "NS" },
		"emf.service":            func(c *sandbox.Config) { c.EMF.Service = "svc" },
		"emf.interval":           func(c *sandbox.Config) { c.EMF.Interval = 2 * time.Minute },
		"emf.instance-dimension": func(c *sandbox.Config) { c.EMF.InstanceDimension = true },
	} {
		t.Run(name, func(t *testing.T) {
			want := sandbox.DefaultConfig()
			change(&want)
			if reflect.DeepEqual(want, sandbox.DefaultConfig()) {
				t.Fatal("the change is the default")
			}
			b, err := want.MarshalFile()
			if err != nil {
				t.Fatal(err)
			}
			key := name[strings.LastIndex(name, ".")+1:]
			if !strings.Contains(string(b), key+":") {
				t.Errorf("the file does not show %s:\n%s", key, b)
			}
			got := sandbox.DefaultConfig()
			if err := got.DecodeFile(b, ""); err != nil {
				t.Fatalf("decode: %v\n%s", err, b)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the config:\n got  %+v\n want %+v\nfile:\n%s", got, want, b)
			}
		})
	}
}

func setDS(c *sandbox.Config, f func(*sandbox.DownstreamProfile)) {
	p := c.Downstreams[sandbox.OpenAI]
	f(&p)
	c.Downstreams[sandbox.OpenAI] = p
}

// A bad file is refused with one line naming the line, the key and what to
// write instead; the defaults it was decoded onto are not validated here.
func TestDecodeFileRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"instancs: 3\n", `line 1: the file: unknown key "instancs"; use instances, listen,`},
		{"traffic:\n  rsp: 3\n", `line 2: traffic: unknown key "rsp"; use rps, clients, max-in-flight, mix`},
		{"emf: {instance-dimensions: true}\n", `line 1: emf: unknown key "instance-dimensions"; use file, namespace, service, interval, instance-dimension`},
		{"downstreams: {openai: {outages: [{every: 1m, for: 1s, fault: error, extra: 1}]}}\n", `downstreams.openai.outages[0]: unknown key "extra"`},
		{"traffic: {rps: fast}\n", `line 1: traffic.rps: "fast" is not a number`},
		{"instances: many\n", `line 1: instances: "many" is not a whole number`},
		{"emf: {instance-dimension: maybe}\n", `line 1: emf.instance-dimension: "maybe" is not true or false`},
		{"allowed-hosts: a.lan\n", `line 1: allowed-hosts: "a.lan" is not a list`},
		{"resilience: {override-refresh: 5}\n", `line 1: resilience.override-refresh: "5" is not a duration like 30m or 4h`},
		{"audit: {interval: -1s}\n", `line 1: audit.interval: "-1s" is not a duration like 30m or 4h`},
		{"downstreams: {redis: {error-rate: 1}}\n", `line 1: downstreams: unknown key "redis"; use core-api, openai, postgres, screening-sim`},
		{"downstreams: {openai: ~}\n", `line 1: downstreams.openai: no settings`},
		{"resilience: {breakers: {postgres: {window: 3}}}\n", `resilience.breakers: unknown key "postgres"; use core-api, openai, screening-sim`},
		{"resilience: {operations: {core-api: {}}}\n", `use core-api/reads, core-api/writes, openai, postgres, screening-sim`},
		{"tools: {search: {budget: 1s}}\n", `tools: unknown key "search"`},
		{"instances: 3\ninstances: 4\n", `line 2: "instances" is given twice`},
		{"- a\n", `line 1: the file: a list is not a mapping`},
		{"profile: [flaky]\n", `line 1: profile: a list is not a string`},
		{"a: [\n", `yaml: line 1:`},
		{"instancs: 3\ntraffic: {rps: fast}\n", `unknown key "instancs"; use instances, listen, allowed-hosts, profile, time-scale, chaos, traffic, principals, downstreams, resilience, tools, defer-retry-after, audit, emf; line 2: traffic.rps`},
	} {
		c := sandbox.DefaultConfig()
		err := c.DecodeFile([]byte(tc.file), "")
		if !errors.Is(err, sandbox.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v\nwant one line with %q", tc.file, err, tc.want)
		}
	}
	c := sandbox.DefaultConfig()
	if err := c.DecodeFile(nil, "chaotic"); !errors.Is(err, sandbox.ErrInvalidConfig) || !strings.Contains(err.Error(), `unknown profile "chaotic"`) {
		t.Errorf("unknown profile: %v", err)
	}
}

// What a file leaves out, gives as null or as an empty string keeps its
// value; a mapping refines, a list replaces, a latency is set whole.
func TestDecodeFileKeepsWhatItDoesNotSet(t *testing.T) {
	c := sandbox.DefaultConfig()
	err := c.DecodeFile([]byte(`
listen: ""
traffic: ~
chaos: {targets: []}
downstreams:
  openai: {latency: {p50: 10ms}, error-rate: 0.5}
resilience: {breakers: {openai: {probes: 1}}}
`), sandbox.ProfileFlaky)
	if err != nil {
		t.Fatal(err)
	}
	flaky, _ := sandbox.Profile(sandbox.ProfileFlaky)
	oa := c.Downstreams[sandbox.OpenAI]
	if c.Listen != sandbox.DefaultListen || c.Traffic.Mix == nil || c.ChaosTargets != nil || c.Profile != sandbox.ProfileFlaky ||
		oa.Latency != (sandbox.Latency{P50: 10 * time.Millisecond}) || oa.ErrorRate != 0.5 || !reflect.DeepEqual(oa.Outages, flaky[sandbox.OpenAI].Outages) ||
		!reflect.DeepEqual(c.Downstreams[sandbox.CoreAPI], flaky[sandbox.CoreAPI]) {
		t.Errorf("decoded %+v", c)
	}
	if b := c.Resilience.Dependency(sandbox.OpenAI).Breaker; b.Probes != 1 || b.WindowSize != 10 {
		t.Errorf("breaker %+v: want probes 1, the rest the defaults", b)
	}
	// The profile argument (the flag) wins over the file's.
	c = sandbox.DefaultConfig()
	if err := c.DecodeFile([]byte("profile: degraded\n"), sandbox.ProfileInstant); err != nil || c.Profile != sandbox.ProfileInstant {
		t.Errorf("profile %s, %v", c.Profile, err)
	}
}

func TestLoadFileReadsRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	c := sandbox.DefaultConfig()
	if err := c.LoadFile(dir, ""); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	path := filepath.Join(dir, "sandbox.yaml")
	if err := os.WriteFile(path, []byte("instances: 2\ntraffic: {rps: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadFile(path, ""); err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), "line 2: traffic.rps") {
		t.Errorf("a bad file: %v, want its path and the line", err)
	}
}
