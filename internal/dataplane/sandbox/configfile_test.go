package sandbox_test

import (
	"errors"
	"fmt"
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
	t.Parallel()
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
	t.Parallel()
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
		{"instancs: 3\ntraffic: {rps: fast}\n", `unknown key "instancs"; use instances, listen, allowed-hosts, profile, time-scale, chaos, traffic, principals, downstreams, resilience, tools, defer-retry-after, audit, emf, ignore-overrides; line 2: traffic.rps`},
		// Every key given twice is refused, the profile too, and within a
		// map of plain values; a merged key is not given twice.
		{"profile: flaky\nprofile: nope\n", `line 2: "profile" is given twice`},
		{"profile: flaky\nprofile: flaky\n", `line 2: "profile" is given twice`},
		{"traffic: {mix: {screen_entity: 1, screen_entity: 2}}\n", `line 1: "traffic.mix.screen_entity" is given twice`},
		{"traffic: {mix: {a: 1, \"a\": 2}}\n", `line 1: "traffic.mix.a" is given twice`},
		{"<<: {instances: 3, instances: 4}\n", `line 1: "instances" is given twice`},
		{"instances: 3\n~: 1\n~: 2\n", `line 3: the file: key "~" is given twice`},
		{"traffic: {<<: {rps: 3}, <<: {clients: 3}}\n", `line 1: "traffic.<<" is given twice`},
		// A map of plain values names the entry at fault.
		{"traffic: {mix: {screen_entity: lots}}\n", `line 1: traffic.mix.screen_entity: "lots" is not a number`},
		{"traffic:\n  mix:\n    \"a\\nb\": x\n", `line 3: traffic.mix."a\nb": "x" is not a number`},
		// A key that is not text is described, not shown as "".
		{"? [a]\n: 1\n", `line 1: the file: a list is not a key; use instances, listen,`},
		{"? {a: 1}\n: 1\n", `line 1: the file: a mapping is not a key; use instances,`},
		{"traffic: {mix: {? [a] : 2}}\n", `line 1: traffic.mix: a list is not a key; use a name`},
		// A merged mapping is checked like the mapping it merges into.
		{"traffic: {<<: {rpx: 3}}\n", `line 1: traffic: unknown key "rpx"; use rps, clients, max-in-flight, mix`},
		{"traffic: {<<: [{rps: 3}, {rpx: 4}]}\n", `line 1: traffic: unknown key "rpx"`},
		{"traffic: {<<: {rps: x}}\n", `line 1: traffic.rps: "x" is not a number`},
		{"traffic: {<<: 3}\n", `line 1: traffic: "3" cannot be merged; merge a mapping or a list of mappings`},
		{"traffic: {<<: [3]}\n", `line 1: traffic: "3" cannot be merged`},
		{"traffic: {<<: ~}\n", `line 1: traffic: "~" cannot be merged`},
		{"a: &l [{rps: 1}]\ntraffic: {<<: *l}\n", `line 2: traffic: a list cannot be merged`},
		{"<<: {profile: nope}\n", `unknown profile "nope"`},
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
	t.Parallel()
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
	t.Parallel()
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

// Aliases and merge keys (<<) read as yaml.v3 reads them: the mapping's own
// keys win over merged ones, and an earlier merged mapping over a later one.
func TestDecodeFileFollowsAliasesAndMergeKeys(t *testing.T) {
	t.Parallel()
	flaky, _ := sandbox.Profile(sandbox.ProfileFlaky)
	degraded, _ := sandbox.Profile(sandbox.ProfileDegraded)
	for _, tc := range []struct {
		file string
		ok   func(c sandbox.Config) bool
	}{
		{"emf: {namespace: &p flaky}\nprofile: *p\n", func(c sandbox.Config) bool {
			return c.Profile == sandbox.ProfileFlaky && reflect.DeepEqual(c.Downstreams, flaky)
		}},
		{"traffic: {<<: {rps: 3, clients: 2}, rps: 5}\n", func(c sandbox.Config) bool { return c.Traffic.RPS == 5 && c.Traffic.Clients == 2 }},
		{"traffic: {rps: 5, <<: {rps: 3, clients: 2}}\n", func(c sandbox.Config) bool { return c.Traffic.RPS == 5 && c.Traffic.Clients == 2 }},
		{"traffic: {<<: [{rps: 3}, {rps: 4, clients: 9}]}\n", func(c sandbox.Config) bool { return c.Traffic.RPS == 3 && c.Traffic.Clients == 9 }},
		{"base: &b {rps: 3}\n", nil}, // an unknown key stays refused
		{"x: &b {rps: 3}\n", nil},
		{"traffic: &b {rps: 3}\naudit: {interval: 2s}\n", func(c sandbox.Config) bool { return c.Traffic.RPS == 3 && c.Audit.Interval == 2*time.Second }},
		{"traffic: {<<: {<<: {clients: 4}, rps: 1}}\n", func(c sandbox.Config) bool { return c.Traffic.RPS == 1 && c.Traffic.Clients == 4 }},
		{"traffic: {<<: [], clients: 2}\n", func(c sandbox.Config) bool { return c.Traffic.Clients == 2 }},
		{"traffic: {mix: {<<: {a: 1, b: 3}, a: 2}}\n", func(c sandbox.Config) bool {
			return reflect.DeepEqual(c.Traffic.Mix, map[string]float64{"a": 2, "b": 3})
		}},
		{"traffic: {mix: {a: &v 1, b: *v, c: ~}}\n", func(c sandbox.Config) bool {
			return reflect.DeepEqual(c.Traffic.Mix, map[string]float64{"a": 1, "b": 1, "c": 0})
		}},
		{"traffic: {mix: {}}\n", func(c sandbox.Config) bool { return c.Traffic.Mix != nil && len(c.Traffic.Mix) == 0 }},
		{"<<: {profile: flaky}\n", func(c sandbox.Config) bool {
			return c.Profile == sandbox.ProfileFlaky && reflect.DeepEqual(c.Downstreams, flaky)
		}},
		{"<<: {profile: nope}\nprofile: degraded\n", func(c sandbox.Config) bool {
			return c.Profile == sandbox.ProfileDegraded && reflect.DeepEqual(c.Downstreams, degraded)
		}},
		{"<<: [{traffic: {rps: 1}}, {traffic: {clients: 2}}]\n", func(c sandbox.Config) bool { return c.Traffic.RPS == 1 && c.Traffic.Clients == 0 }},
		{"defaults: &d {error-rate: 0.5}\n", nil},
		{"downstreams: {openai: {<<: {error-rate: 0.5, timeout-rate: 0.25}, error-rate: 0.125}}\n", func(c sandbox.Config) bool {
			oa := c.Downstreams[sandbox.OpenAI]
			return oa.ErrorRate == 0.125 && oa.TimeoutRate == 0.25
		}},
		{"resilience: {breakers: {openai: {<<: {probes: 1}, window: 3}}}\n", func(c sandbox.Config) bool {
			b := c.Resilience.Dependency(sandbox.OpenAI).Breaker
			return b.Probes == 1 && b.WindowSize == 3
		}},
		// yaml.v3 skipped a null key and read a !!binary string.
		{"~: 1\nnull: {any: thing}\n", func(c sandbox.Config) bool { return reflect.DeepEqual(c, sandbox.DefaultConfig()) }},
		{"profile: !!binary Zmxha3k=\n", func(c sandbox.Config) bool { return c.Profile == sandbox.ProfileFlaky }},
		{"? !!binary aW5zdGFuY2Vz\n: 3\n", func(c sandbox.Config) bool { return c.Instances == 3 }},
	} {
		c := sandbox.DefaultConfig()
		err := c.DecodeFile([]byte(tc.file), "")
		switch {
		case tc.ok == nil && !errors.Is(err, sandbox.ErrInvalidConfig):
			t.Errorf("%q: %v, want it refused", tc.file, err)
		case tc.ok != nil && err != nil:
			t.Errorf("%q: %v", tc.file, err)
		case tc.ok != nil && !tc.ok(c):
			t.Errorf("%q: decoded %+v", tc.file, c)
		}
	}
}

// However many problems a file has, the error is one line of a few
// problems and a count of the rest.
func TestDecodeFileErrorIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	n := 0
	for b.Len() < 990<<10 {
		fmt.Fprintf(&b, "unknown-key-%d: 1\n", n)
		n++
	}
	c := sandbox.DefaultConfig()
	err := c.DecodeFile([]byte(b.String()), "")
	if !errors.Is(err, sandbox.ErrInvalidConfig) {
		t.Fatalf("%d unknown keys: %v", n, err)
	}
	msg := err.Error()
	if len(msg) > 4<<10 || strings.Contains(msg, "\n") || !strings.HasSuffix(msg, fmt.Sprintf("(and %d more)", n-10)) ||
		!strings.Contains(msg, `line 10: the file: unknown key "unknown-key-9"`) || strings.Contains(msg, `"unknown-key-10"`) {
		t.Errorf("%d unknown keys: a %d-byte error: %.600s ... %s", n, len(msg), msg, msg[max(0, len(msg)-100):])
	}
}

// Aliases that expand without end and nesting past yaml's depth are
// refused, never a panic or a hang.
func TestDecodeFileRefusesAliasBombsAndDeepNesting(t *testing.T) {
	t.Parallel()
	var bomb strings.Builder
	bomb.WriteString("x:\n  - &a0 {rps: 1}\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&bomb, "  - &a%d {<<: [*a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d]}\n", i, i-1)
	}
	bomb.WriteString("traffic: *a29\n")
	var lists strings.Builder
	lists.WriteString("x:\n  - &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&lists, "  - &l%d [*l%[2]d, *l%[2]d, *l%[2]d, *l%[2]d, *l%[2]d, *l%[2]d, *l%[2]d, *l%[2]d]\n", i, i-1)
	}
	lists.WriteString("principals: *l29\nallowed-hosts: *l29\nchaos: {targets: *l29}\n")
	for name, tc := range map[string]struct{ file, want string }{
		"merge bomb":   {bomb.String(), "excessive aliasing"},
		"list bomb":    {lists.String(), "is not a mapping"},
		"deep mapping": {strings.Repeat("{a: ", 20000) + strings.Repeat("}", 20000) + "\n", "yaml:"},
		"deep list":    {"allowed-hosts: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", "yaml:"},
	} {
		c := sandbox.DefaultConfig()
		err := c.DecodeFile([]byte(tc.file), "")
		if !errors.Is(err, sandbox.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 4<<10 {
			t.Errorf("%s: %.300v, want a short error with %q", name, err, tc.want)
		}
	}
}
