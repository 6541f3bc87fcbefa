package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// maxConfigFile bounds a sandbox configuration file; a complete one is a few
// KiB.
const maxConfigFile = 1 << 20

// fileView is the sandbox's YAML configuration file laid over a [Config]:
// every field points into the Config, so decoding the file writes over the
// Config's values (the defaults) and encoding it prints them. The sections
// the sandbox owns (traffic, principals, downstreams, tools, audit, emf) are
// the Config's own types, named by their yaml tags; chaos and resilience
// gather settings kept elsewhere in the Config. Rate limits are not here:
// they are the context's, so `koshactl ratelimit` and the sandbox agree.
type fileView struct {
	Instances       *int                          `yaml:"instances"`
	Listen          *string                       `yaml:"listen,omitempty"`
	AllowedHosts    *[]string                     `yaml:"allowed-hosts,omitempty"`
	Profile         *string                       `yaml:"profile,omitempty"`
	TimeScale       *float64                      `yaml:"time-scale"`
	Chaos           chaosView                     `yaml:"chaos"`
	Traffic         *TrafficSettings              `yaml:"traffic"`
	Principals      *[]Principal                  `yaml:"principals,omitempty"`
	Downstreams     *map[string]DownstreamProfile `yaml:"downstreams,omitempty"`
	Resilience      resilienceView                `yaml:"resilience"`
	Tools           *map[string]ToolSettings      `yaml:"tools,omitempty"`
	DeferRetryAfter *time.Duration                `yaml:"defer-retry-after"`
	Audit           *AuditSettings                `yaml:"audit"`
	EMF             *EMFSettings                  `yaml:"emf,omitempty"`
}

type chaosView struct {
	Enabled *bool           `yaml:"enabled"`
	Targets *[]chaos.Target `yaml:"targets,omitempty"`
}

type resilienceView struct {
	MaxInFlight     *int                     `yaml:"max-in-flight"`
	OverrideRefresh *time.Duration           `yaml:"override-refresh"`
	OverridePoll    *time.Duration           `yaml:"override-poll,omitempty"`
	Breakers        map[string]breakerView   `yaml:"breakers"`
	Operations      map[string]operationView `yaml:"operations"`
}

// breakerView is a dependency's breaker (core-api, openai and screening-sim
// have one).
type breakerView struct {
	Window       *int           `yaml:"window"`
	MinCalls     *int           `yaml:"min-calls"`
	FailureRate  *float64       `yaml:"failure-rate"`
	OpenDuration *time.Duration `yaml:"open-duration"`
	Probes       *int           `yaml:"probes"`
}

// operationView is an operation's policy; the keys are core-api/reads,
// core-api/writes, screening-sim, openai and postgres.
type operationView struct {
	AttemptCap   *time.Duration `yaml:"attempt-cap"`
	MaxAttempts  *int           `yaml:"max-attempts"`
	Bulkhead     *int           `yaml:"bulkhead"`
	BulkheadWait *time.Duration `yaml:"bulkhead-wait"`
	Margin       *time.Duration `yaml:"margin"`
	BaseDelay    *time.Duration `yaml:"base-delay"`
	MaxDelay     *time.Duration `yaml:"max-delay"`
}

func (c *Config) file() fileView {
	r := resilienceView{MaxInFlight: &c.Resilience.MaxInFlight, OverrideRefresh: &c.OverrideRefresh, OverridePoll: &c.OverridePoll,
		Breakers: map[string]breakerView{}, Operations: map[string]operationView{}}
	for i := range c.Resilience.Dependencies {
		if b := c.Resilience.Dependencies[i].Breaker; b != nil {
			r.Breakers[c.Resilience.Dependencies[i].Name] = breakerView{&b.WindowSize, &b.MinCalls, &b.FailureRate, &b.OpenDuration, &b.Probes}
		}
	}
	for i := range c.Resilience.Operations {
		o := &c.Resilience.Operations[i]
		key := strings.TrimSuffix(o.Dependency+"/"+o.Operation, "/")
		r.Operations[key] = operationView{&o.AttemptCap, &o.MaxAttempts, &o.Bulkhead, &o.BulkheadWait, &o.Margin, &o.BaseDelay, &o.MaxDelay}
	}
	return fileView{&c.Instances, &c.Listen, &c.AllowedHosts, &c.Profile, &c.TimeScale, chaosView{&c.ChaosEnabled, &c.ChaosTargets},
		&c.Traffic, &c.Principals, &c.Downstreams, r, &c.Tools, &c.DeferRetryAfter, &c.Audit, &c.EMF}
}

// LoadFile reads the configuration file at path over c (see
// [Config.DecodeFile]). Only a regular file is read: a named pipe or device
// could block the command forever. An empty path reads no file.
func (c *Config) LoadFile(path, profile string) error {
	if profile != "" {
		if _, err := Profile(profile); err != nil {
			return err
		}
	}
	var data []byte
	if path != "" {
		var err error
		if data, _, err = fsutil.ReadRegular(path, maxConfigFile); err != nil {
			return fmt.Errorf("read sandbox config: %w", err)
		}
	}
	if err := c.DecodeFile(data, profile); err != nil {
		if path != "" {
			return fmt.Errorf("%s: %w", path, err)
		}
		return err
	}
	return nil
}

// DecodeFile writes what a configuration file sets over c; what it leaves
// out keeps c's value. The profile named by the file, or by profile when not
// empty, replaces the downstreams first, so the file's downstream settings
// refine it. A mapping refines the setting it names; a list or a value
// replaces it whole. An unknown key, a key given twice or a value of the
// wrong type is an error naming its line; DecodeFile does not validate the
// result: call [Config.Validate].
func (c *Config) DecodeFile(data []byte, profile string) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(strings.Fields(err.Error()), " "))
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	if root.Kind == yaml.MappingNode { // the profile first, whatever the key order
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "profile" && profile == "" && root.Content[i+1].ShortTag() != "!!null" {
				profile = root.Content[i+1].Value
			}
		}
	}
	if profile != "" {
		ds, err := Profile(profile)
		if err != nil {
			return err
		}
		c.Profile, c.Downstreams = profile, ds
	}
	var problems []string
	if root.Kind != 0 && root.Kind != yaml.DocumentNode {
		v := c.file()
		decodeOnto(root, reflect.ValueOf(&v).Elem(), "", &problems)
	}
	if profile != "" {
		c.Profile = profile // the flag's, over the file's
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

// wholeInFile marks a value a file sets whole: a latency's p50 and p99 are
// one distribution, so a file that gives one gives the other as 0.
type wholeInFile interface{ wholeInFile() }

func (*Latency) wholeInFile() {}

var durationType = reflect.TypeFor[time.Duration]()

// decodeOnto writes n over v (see [Config.DecodeFile]), appending each
// problem with its line and key path.
func decodeOnto(n *yaml.Node, v reflect.Value, path string, problems *[]string) {
	bad := func(format string, args ...any) {
		*problems = append(*problems, fmt.Sprintf("line %d: %s: ", n.Line, cmpOr(path, "the file"))+fmt.Sprintf(format, args...))
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if n.ShortTag() == "!!null" || (v.Kind() == reflect.String && n.Kind == yaml.ScalarNode && n.Value == "") {
		return // as if the key were absent
	}
	if _, ok := v.Addr().Interface().(wholeInFile); ok {
		v.SetZero()
	}
	if v.Kind() == reflect.Struct || (v.Kind() == reflect.Map && v.Type().Elem().Kind() == reflect.Struct) {
		if n.Kind != yaml.MappingNode {
			bad("%s is not a mapping of keys to values", describe(n))
			return
		}
		keys := fileKeys(v)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i].Value, n.Content[i+1]
			sub := strings.TrimPrefix(path+"."+k, ".")
			switch {
			case path == "" && k == "profile": // applied first; checked here
				var name string
				decodeOnto(val, reflect.ValueOf(&name).Elem(), sub, problems)
			case seen[k]:
				*problems = append(*problems, fmt.Sprintf("line %d: %s is given twice", n.Content[i].Line, strconv.Quote(sub)))
			case !slices.Contains(keys, k):
				*problems = append(*problems, fmt.Sprintf("line %d: %s: unknown key %s; use %s", n.Content[i].Line,
					cmpOr(path, "the file"), strconv.Quote(k), strings.Join(keys, ", ")))
			case v.Kind() == reflect.Map && val.ShortTag() == "!!null":
				*problems = append(*problems, fmt.Sprintf("line %d: %s: no settings; give some or leave the key out", val.Line, sub))
			case v.Kind() == reflect.Map:
				e := reflect.New(v.Type().Elem()).Elem()
				e.Set(v.MapIndex(reflect.ValueOf(k)))
				decodeOnto(val, e, sub, problems)
				v.SetMapIndex(reflect.ValueOf(k), e)
			default:
				decodeOnto(val, v.Field(slices.Index(fieldKeys(v.Type()), k)), sub, problems)
			}
			seen[k] = true
		}
		return
	}
	switch {
	case v.Type() == durationType:
		if d, err := config.ParseDuration(n.Value); err != nil {
			bad("%v", err)
		} else {
			v.SetInt(int64(d))
		}
	case v.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		v.SetZero() // a list replaces the setting whole; an empty list leaves it nil
		for i, item := range n.Content {
			e := reflect.New(v.Type().Elem()).Elem()
			decodeOnto(item, e, fmt.Sprintf("%s[%d]", path, i), problems)
			v.Set(reflect.Append(v, e))
		}
	default:
		if v.Kind() == reflect.Map {
			v.SetZero() // replaced whole, not merged
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) {
				bad("%s is not %s", describe(n), kindName(v.Type()))
			} else {
				bad("%v", err)
			}
		}
	}
}

// fileKeys returns the keys a mapping onto v may use: a struct's yaml names,
// a map's existing keys (sorted).
func fileKeys(v reflect.Value) []string {
	if v.Kind() == reflect.Struct {
		return fieldKeys(v.Type())
	}
	keys := make([]string, 0, v.Len())
	for _, k := range v.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	return keys
}

// fieldKeys returns the yaml name of each field of t, in order ("" for a
// field without one).
func fieldKeys(t reflect.Type) []string {
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
	}
	return keys
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[n.Kind]
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint8:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	default:
		return "a " + t.String()
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// MarshalFile returns c as a complete configuration file (what `koshactl
// sandbox config` prints): every setting, but those tagged omitempty when
// zero.
func (c Config) MarshalFile() ([]byte, error) {
	c = c.Clone()
	v := c.file()
	omitZero(reflect.ValueOf(&v).Elem())
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode sandbox config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode sandbox config: %w", err)
	}
	return b.Bytes(), nil
}

// omitZero clears the view's omitempty pointers to empty values, so yaml
// leaves them out as it leaves out empty values.
func omitZero(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Struct {
			omitZero(f)
		}
		if f.Kind() == reflect.Pointer && strings.HasSuffix(v.Type().Field(i).Tag.Get("yaml"), ",omitempty") {
			if e := f.Elem(); e.IsZero() || ((e.Kind() == reflect.Slice || e.Kind() == reflect.Map) && e.Len() == 0) {
				f.SetZero()
			}
		}
	}
}
