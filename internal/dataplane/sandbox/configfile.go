package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// File is the sandbox's YAML configuration file. Every field is optional:
// what it sets replaces the default (or the profile's value); lists
// (principals, outages, chaos targets) replace the default list whole.
// Rate limits are not here: they are the context's, so `koshactl ratelimit`
// and the sandbox agree. Durations are LLD time, like [Config].
type File struct {
	Instances *int   `yaml:"instances,omitempty"`
	Listen    string `yaml:"listen,omitempty"`
	// AllowedHosts are extra Host names /mcp and /admin accept (see
	// [Config.AllowedHosts]); the --allowed-host flags replace them.
	AllowedHosts []string                   `yaml:"allowed-hosts,omitempty"`
	Profile      string                     `yaml:"profile,omitempty"`
	TimeScale    *float64                   `yaml:"time-scale,omitempty"`
	Chaos        *FileChaos                 `yaml:"chaos,omitempty"`
	Traffic      *FileTraffic               `yaml:"traffic,omitempty"`
	Principals   []FilePrincipal            `yaml:"principals,omitempty"`
	Downstreams  map[string]*FileDownstream `yaml:"downstreams,omitempty"`
	Resilience   *FileResilience            `yaml:"resilience,omitempty"`
	Tools        map[string]*FileTool       `yaml:"tools,omitempty"`
	// DeferRetryAfter is screen_entity's retry_after_s when deferred and the
	// breaker gives no better hint.
	DeferRetryAfter *config.Duration `yaml:"defer-retry-after,omitempty"`
	Audit           *FileAudit       `yaml:"audit,omitempty"`
	EMF             *FileEMF         `yaml:"emf,omitempty"`
}

// FileChaos is the chaos section.
type FileChaos struct {
	Enabled *bool    `yaml:"enabled,omitempty"`
	Targets []string `yaml:"targets,omitempty"`
}

// FileTraffic is the traffic generator's section.
type FileTraffic struct {
	RPS         *float64           `yaml:"rps,omitempty"`
	Clients     *int               `yaml:"clients,omitempty"`
	MaxInFlight *int               `yaml:"max-in-flight,omitempty"`
	Mix         map[string]float64 `yaml:"mix,omitempty"`
}

// FilePrincipal maps a bearer token to a client and a role.
type FilePrincipal struct {
	Token  string `yaml:"token"`
	Client string `yaml:"client"`
	Role   Role   `yaml:"role"`
}

// FileDownstream overrides a downstream's profile.
type FileDownstream struct {
	Latency     *FileLatency `yaml:"latency,omitempty"`
	ErrorRate   *float64     `yaml:"error-rate,omitempty"`
	TimeoutRate *float64     `yaml:"timeout-rate,omitempty"`
	ResetRate   *float64     `yaml:"reset-rate,omitempty"`
	Outages     []FileOutage `yaml:"outages,omitempty"`
}

// FileLatency is a latency distribution (log-normal through p50 and p99).
type FileLatency struct {
	P50 config.Duration `yaml:"p50"`
	P99 config.Duration `yaml:"p99"`
}

// FileOutage is a periodic outage.
type FileOutage struct {
	Every  config.Duration `yaml:"every"`
	For    config.Duration `yaml:"for"`
	Offset config.Duration `yaml:"offset,omitempty"`
	Fault  chaos.Fault     `yaml:"fault"`
	Ms     int             `yaml:"ms,omitempty"`
}

// FileResilience overrides the data plane's settings.
type FileResilience struct {
	MaxInFlight     *int                      `yaml:"max-in-flight,omitempty"`
	OverrideRefresh *config.Duration          `yaml:"override-refresh,omitempty"`
	OverridePoll    *config.Duration          `yaml:"override-poll,omitempty"`
	Breakers        map[string]*FileBreaker   `yaml:"breakers,omitempty"`
	Operations      map[string]*FileOperation `yaml:"operations,omitempty"`
}

// FileBreaker overrides one dependency's breaker.
type FileBreaker struct {
	Window       *int             `yaml:"window,omitempty"`
	MinCalls     *int             `yaml:"min-calls,omitempty"`
	FailureRate  *float64         `yaml:"failure-rate,omitempty"`
	OpenDuration *config.Duration `yaml:"open-duration,omitempty"`
	Probes       *int             `yaml:"probes,omitempty"`
}

// FileOperation overrides one operation's policy; the keys are core-api/reads,
// core-api/writes, screening-sim, openai and postgres.
type FileOperation struct {
	AttemptCap   *config.Duration `yaml:"attempt-cap,omitempty"`
	MaxAttempts  *int             `yaml:"max-attempts,omitempty"`
	Bulkhead     *int             `yaml:"bulkhead,omitempty"`
	BulkheadWait *config.Duration `yaml:"bulkhead-wait,omitempty"`
	Margin       *config.Duration `yaml:"margin,omitempty"`
	BaseDelay    *config.Duration `yaml:"base-delay,omitempty"`
	MaxDelay     *config.Duration `yaml:"max-delay,omitempty"`
}

// FileTool overrides a tool's deadline settings.
type FileTool struct {
	Budget    *config.Duration `yaml:"budget,omitempty"`
	MinBudget *config.Duration `yaml:"min-budget,omitempty"`
}

// FileAudit bounds the audit records of ignored chaos headers.
type FileAudit struct {
	Interval       *config.Duration `yaml:"interval,omitempty"`
	MaxPerInterval *int             `yaml:"max-per-interval,omitempty"`
}

// FileEMF configures the EMF lines.
type FileEMF struct {
	// File is where the lines go (appended); the --emf flag overrides it.
	File      string           `yaml:"file,omitempty"`
	Namespace string           `yaml:"namespace,omitempty"`
	Service   string           `yaml:"service,omitempty"`
	Interval  *config.Duration `yaml:"interval,omitempty"`
	// InstanceDimension adds the instance-level dimension set.
	InstanceDimension *bool `yaml:"instance-dimension,omitempty"`
}

// maxConfigFile bounds a sandbox configuration file; a complete one is a few
// KiB.
const maxConfigFile = 1 << 20

// LoadFile reads a configuration file strictly: an unknown key is an error
// naming its line.
func LoadFile(path string) (*File, error) {
	// Regular files only: a named pipe or device could block the command
	// forever.
	data, _, err := fsutil.ReadRegular(path, maxConfigFile)
	if err != nil {
		return nil, fmt.Errorf("read sandbox config: %w", err)
	}
	f, err := ParseFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ParseFile decodes a configuration file's content strictly.
func ParseFile(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(strings.Fields(err.Error()), " "))
	}
	return &f, nil
}

// operationKeys maps the file's operation keys to dependency and operation.
var operationKeys = map[string][2]string{
	"core-api/reads":  {CoreAPI, resilience.Reads},
	"core-api/writes": {CoreAPI, resilience.Writes},
	ScreeningSim:      {ScreeningSim, ""},
	OpenAI:            {OpenAI, ""},
	Postgres:          {Postgres, ""},
}

func dur(d *config.Duration) time.Duration { return time.Duration(*d) }

// Apply writes what f sets over c. A profile is applied first, so the
// file's downstream settings refine it. Apply does not validate; call
// [Config.Validate].
func (f *File) Apply(c *Config) error {
	var errs []error
	if f.Instances != nil {
		c.Instances = *f.Instances
	}
	if f.Listen != "" {
		c.Listen = f.Listen
	}
	if f.AllowedHosts != nil {
		c.AllowedHosts = slices.Clone(f.AllowedHosts)
	}
	if f.Profile != "" {
		p, err := Profile(f.Profile)
		if err != nil {
			errs = append(errs, err)
		} else {
			c.Profile, c.Downstreams = f.Profile, p
		}
	}
	if f.TimeScale != nil {
		c.TimeScale = *f.TimeScale
	}
	if ch := f.Chaos; ch != nil {
		if ch.Enabled != nil {
			c.ChaosEnabled = *ch.Enabled
		}
		if ch.Targets != nil {
			c.ChaosTargets = nil
			for _, t := range ch.Targets {
				c.ChaosTargets = append(c.ChaosTargets, chaos.Target(t))
			}
		}
	}
	if t := f.Traffic; t != nil {
		if t.RPS != nil {
			c.Traffic.RPS = *t.RPS
		}
		if t.Clients != nil {
			c.Traffic.Clients = *t.Clients
		}
		if t.MaxInFlight != nil {
			c.Traffic.MaxInFlight = *t.MaxInFlight
		}
		if t.Mix != nil {
			c.Traffic.Mix = t.Mix
		}
	}
	if f.Principals != nil {
		c.Principals = nil
		for _, p := range f.Principals {
			c.Principals = append(c.Principals, Principal(p))
		}
	}
	for _, name := range sortedKeys(f.Downstreams) {
		fd := f.Downstreams[name]
		p, ok := c.Downstreams[name]
		if !ok || fd == nil {
			errs = append(errs, fmt.Errorf("%w: downstreams: %q is not a downstream (%s)", ErrInvalidConfig, name, strings.Join(Downstreams(), ", ")))
			continue
		}
		if fd.Latency != nil {
			p.Latency = Latency{P50: dur(&fd.Latency.P50), P99: dur(&fd.Latency.P99)}
		}
		for dst, src := range map[*float64]*float64{&p.ErrorRate: fd.ErrorRate, &p.TimeoutRate: fd.TimeoutRate, &p.ResetRate: fd.ResetRate} {
			if src != nil {
				*dst = *src
			}
		}
		if fd.Outages != nil {
			p.Outages = nil
			for _, o := range fd.Outages {
				p.Outages = append(p.Outages, Outage{Every: dur(&o.Every), For: dur(&o.For), Offset: dur(&o.Offset), Fault: o.Fault, Ms: o.Ms})
			}
		}
		c.Downstreams[name] = p
	}
	if r := f.Resilience; r != nil {
		errs = append(errs, r.apply(c)...)
	}
	for _, name := range sortedKeys(f.Tools) {
		ft := f.Tools[name]
		t, ok := c.Tools[name]
		if !ok || ft == nil {
			errs = append(errs, fmt.Errorf("%w: tools: %q is not a tool (%s)", ErrInvalidConfig, name, strings.Join(Tools(), ", ")))
			continue
		}
		if ft.Budget != nil {
			t.Budget = dur(ft.Budget)
		}
		if ft.MinBudget != nil {
			t.MinBudget = dur(ft.MinBudget)
		}
		c.Tools[name] = t
	}
	if f.DeferRetryAfter != nil {
		c.DeferRetryAfter = dur(f.DeferRetryAfter)
	}
	if a := f.Audit; a != nil {
		if a.Interval != nil {
			c.Audit.Interval = dur(a.Interval)
		}
		if a.MaxPerInterval != nil {
			c.Audit.MaxPerInterval = *a.MaxPerInterval
		}
	}
	if e := f.EMF; e != nil {
		if e.Namespace != "" {
			c.EMF.Namespace = e.Namespace
		}
		if e.Service != "" {
			c.EMF.Service = e.Service
		}
		if e.Interval != nil {
			c.EMF.Interval = dur(e.Interval)
		}
		if e.InstanceDimension != nil {
			c.EMF.InstanceDimension = *e.InstanceDimension
		}
	}
	return errors.Join(errs...)
}

func (r *FileResilience) apply(c *Config) []error {
	var errs []error
	if r.MaxInFlight != nil {
		c.Resilience.MaxInFlight = *r.MaxInFlight
	}
	if r.OverrideRefresh != nil {
		c.OverrideRefresh = dur(r.OverrideRefresh)
	}
	if r.OverridePoll != nil {
		c.OverridePoll = dur(r.OverridePoll)
	}
	for _, name := range sortedKeys(r.Breakers) {
		fb := r.Breakers[name]
		d := c.Resilience.Dependency(name)
		if d == nil || d.Breaker == nil || fb == nil {
			errs = append(errs, fmt.Errorf("%w: resilience.breakers: %q has no breaker (core-api, openai, screening-sim do)", ErrInvalidConfig, name))
			continue
		}
		b := d.Breaker
		if fb.Window != nil {
			b.WindowSize = *fb.Window
		}
		if fb.MinCalls != nil {
			b.MinCalls = *fb.MinCalls
		}
		if fb.FailureRate != nil {
			b.FailureRate = *fb.FailureRate
		}
		if fb.OpenDuration != nil {
			b.OpenDuration = dur(fb.OpenDuration)
		}
		if fb.Probes != nil {
			b.Probes = *fb.Probes
		}
	}
	for _, key := range sortedKeys(r.Operations) {
		fo := r.Operations[key]
		k, ok := operationKeys[key]
		o := c.Resilience.Operation(k[0], k[1])
		if !ok || o == nil || fo == nil {
			errs = append(errs, fmt.Errorf("%w: resilience.operations: %q: use core-api/reads, core-api/writes, screening-sim, openai or postgres", ErrInvalidConfig, key))
			continue
		}
		for dst, src := range map[*time.Duration]*config.Duration{&o.AttemptCap: fo.AttemptCap, &o.BulkheadWait: fo.BulkheadWait,
			&o.Margin: fo.Margin, &o.BaseDelay: fo.BaseDelay, &o.MaxDelay: fo.MaxDelay} {
			if src != nil {
				*dst = dur(src)
			}
		}
		if fo.MaxAttempts != nil {
			o.MaxAttempts = *fo.MaxAttempts
		}
		if fo.Bulkhead != nil {
			o.Bulkhead = *fo.Bulkhead
		}
	}
	return errs
}

// FileOf returns c as a complete configuration file (what `koshactl sandbox
// config` prints).
func FileOf(c Config) *File {
	c = c.Clone()
	d := func(v time.Duration) *config.Duration { x := config.Duration(v); return &x }
	f := &File{
		Instances: &c.Instances, Listen: c.Listen, AllowedHosts: c.AllowedHosts, Profile: c.Profile, TimeScale: &c.TimeScale,
		Chaos:           &FileChaos{Enabled: &c.ChaosEnabled},
		Traffic:         &FileTraffic{RPS: &c.Traffic.RPS, Clients: &c.Traffic.Clients, Mix: c.Traffic.Mix},
		Downstreams:     map[string]*FileDownstream{},
		Tools:           map[string]*FileTool{},
		DeferRetryAfter: d(c.DeferRetryAfter),
		Audit:           &FileAudit{Interval: d(c.Audit.Interval), MaxPerInterval: &c.Audit.MaxPerInterval},
		Resilience: &FileResilience{MaxInFlight: &c.Resilience.MaxInFlight, OverrideRefresh: d(c.OverrideRefresh),
			Breakers: map[string]*FileBreaker{}, Operations: map[string]*FileOperation{}},
	}
	if c.Traffic.MaxInFlight != 0 {
		f.Traffic.MaxInFlight = &c.Traffic.MaxInFlight
	}
	if c.OverridePoll != 0 {
		f.Resilience.OverridePoll = d(c.OverridePoll)
	}
	for _, t := range c.ChaosTargets {
		f.Chaos.Targets = append(f.Chaos.Targets, string(t))
	}
	for _, p := range c.Principals {
		f.Principals = append(f.Principals, FilePrincipal(p))
	}
	for name, p := range c.Downstreams {
		r := func(v float64) *float64 { return &v }
		fd := &FileDownstream{Latency: &FileLatency{P50: config.Duration(p.Latency.P50), P99: config.Duration(p.Latency.P99)},
			ErrorRate: r(p.ErrorRate), TimeoutRate: r(p.TimeoutRate), ResetRate: r(p.ResetRate)}
		for _, o := range p.Outages {
			fd.Outages = append(fd.Outages, FileOutage{Every: config.Duration(o.Every), For: config.Duration(o.For),
				Offset: config.Duration(o.Offset), Fault: o.Fault, Ms: o.Ms})
		}
		f.Downstreams[name] = fd
	}
	for _, dep := range c.Resilience.Dependencies {
		if b := dep.Breaker; b != nil {
			b2 := *b
			f.Resilience.Breakers[dep.Name] = &FileBreaker{Window: &b2.WindowSize, MinCalls: &b2.MinCalls, FailureRate: &b2.FailureRate,
				OpenDuration: d(b2.OpenDuration), Probes: &b2.Probes}
		}
	}
	for key, k := range operationKeys {
		if o := c.Resilience.Operation(k[0], k[1]); o != nil {
			o2 := *o
			f.Resilience.Operations[key] = &FileOperation{AttemptCap: d(o2.AttemptCap), MaxAttempts: &o2.MaxAttempts,
				Bulkhead: &o2.Bulkhead, BulkheadWait: d(o2.BulkheadWait), Margin: d(o2.Margin), BaseDelay: d(o2.BaseDelay), MaxDelay: d(o2.MaxDelay)}
		}
	}
	for name, t := range c.Tools {
		f.Tools[name] = &FileTool{Budget: d(t.Budget), MinBudget: d(t.MinBudget)}
	}
	if c.EMF != (EMFSettings{}) {
		f.EMF = &FileEMF{Namespace: c.EMF.Namespace, Service: c.EMF.Service, InstanceDimension: &c.EMF.InstanceDimension}
		if c.EMF.Interval != 0 {
			f.EMF.Interval = d(c.EMF.Interval)
		}
	}
	return f
}

// Marshal encodes f as YAML.
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("encode sandbox config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode sandbox config: %w", err)
	}
	return b.Bytes(), nil
}
