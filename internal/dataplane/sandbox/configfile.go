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
	IgnoreOverrides *[]int                        `yaml:"ignore-overrides,omitempty"`
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
		&c.Traffic, &c.Principals, &c.Downstreams, r, &c.Tools, &c.DeferRetryAfter, &c.Audit, &c.EMF, &c.IgnoreOverrides}
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
// replaces it whole. Aliases and merge keys (<<) read as in yaml.v3: a
// mapping's own keys win over merged ones, an earlier merged mapping over a
// later one. The file is walked by hand, not decoded by yaml.v3 with
// KnownFields as the config file is, because it refines defaults (a
// mapping refines, a list replaces) and reports every problem with its line
// and key path; it applies merge keys, unlike a drill, because a fleet
// profile is data that repeats by nature (downstreams sharing latencies),
// and applies them exactly as yaml.v3 would, so the policy a user meets is
// the config file's (docs/project-layout.md, "Reading YAML"). An unknown key, a key given twice in one mapping or a value of
// the wrong type is an error naming its line (the first [maxProblems], and
// how many more); DecodeFile does not validate the result: call
// [Config.Validate].
func (c *Config) DecodeFile(data []byte, profile string) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(strings.Fields(err.Error()), " "))
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	var d fileDecoder
	var top []fileEntry
	if root.Kind == yaml.MappingNode { // the profile first, whatever the key order
		top = d.entries(root, "", fieldKeys(reflect.TypeFor[fileView]()))
		for _, e := range top {
			var name string
			if e.name == "profile" && profile == "" && e.val.Decode(&name) == nil {
				profile = name // a wrong type is reported with the rest
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
	v := c.file()
	switch {
	case root.Kind == yaml.MappingNode:
		d.decodeEntries(top, reflect.ValueOf(&v).Elem(), "")
	case root.Kind != 0 && root.Kind != yaml.DocumentNode:
		d.decodeOnto(root, reflect.ValueOf(&v).Elem(), "")
	}
	if profile != "" {
		c.Profile = profile // the flag's, over the file's
	}
	return d.err()
}

// maxProblems is how many problems an error about a file lists; it counts
// the rest.
const maxProblems = 10

// fileDecoder decodes a file's nodes onto a [fileView], gathering problems.
// It counts the nodes it visits as yaml.v3 counts its decodes, and stops
// with yaml.v3's limit on how many of them may come through aliases, so
// aliases that expand without end are refused in bounded time.
type fileDecoder struct {
	problems   []string
	more       int  // problems past maxProblems
	stopped    bool // excessive aliasing: nothing more is read
	visits     int
	aliased    int // visits under an alias
	aliasDepth int
}

// fileEntry is a key of a mapping and its value, merge keys applied.
type fileEntry struct {
	name     string
	key, val *yaml.Node
}

func (d *fileDecoder) problem(line int, path, format string, args ...any) {
	if path != "" {
		path += ": "
	}
	if len(d.problems) == maxProblems {
		d.more++
		return
	}
	d.problems = append(d.problems, fmt.Sprintf("line %d: %s", line, path)+fmt.Sprintf(format, args...))
}

func (d *fileDecoder) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	msg := strings.Join(d.problems, "; ")
	if d.more > 0 {
		msg += fmt.Sprintf(" (and %d more)", d.more)
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, msg)
}

// visit counts a visit of n, resolves an alias, and reports whether the
// walk goes on; a caller given aliased must call d.leave when done with n.
func (d *fileDecoder) visit(n *yaml.Node, path string) (_ *yaml.Node, aliased, ok bool) {
	if d.stopped {
		return n, false, false
	}
	d.visits++
	if d.aliasDepth > 0 {
		d.aliased++
	}
	if d.aliased > 100 && d.visits > 1000 && float64(d.aliased)/float64(d.visits) > allowedAliasRatio(d.visits) {
		d.problem(n.Line, cmpOr(path, "the file"), "the document contains excessive aliasing; use fewer aliases")
		d.stopped = true
		return n, false, false
	}
	if aliased = n.Kind == yaml.AliasNode; aliased {
		n = resolve(n)
		d.aliasDepth++
	}
	return n, aliased, true
}

func (d *fileDecoder) leave(aliased bool) {
	if aliased {
		d.aliasDepth--
	}
}

// allowedAliasRatio is yaml.v3's: the share of decodes that may come
// through aliases, 99% up to 400,000 decodes, falling to 10% at 4,000,000.
func allowedAliasRatio(decodes int) float64 {
	const low, high = 400_000, 4_000_000
	switch {
	case decodes <= low:
		return 0.99
	case decodes >= high:
		return 0.10
	default:
		return 0.99 - 0.89*float64(decodes-low)/float64(high-low)
	}
}

// isMerge reports whether k is a merge key, as yaml.v3 decides it (a
// quoted "<<" is a plain key).
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

// entries returns the keys of mapping n at path with their values, as
// yaml.v3 reads them: n's own keys, then those of each mapping merged into
// it (<<) in order, a key already given skipped. A key given twice in one
// mapping, a key that is not text, and a merge of something that is not a
// mapping are problems (keys lists the keys allowed there, for the fix); a
// null key is skipped, as yaml.v3 skipped it.
func (d *fileDecoder) entries(n *yaml.Node, path string, keys []string) []fileEntry {
	var out []fileEntry
	d.collect(n, path, keys, map[string]bool{}, &out)
	return out
}

func (d *fileDecoder) collect(n *yaml.Node, path string, keys []string, given map[string]bool, out *[]fileEntry) {
	var merges []*yaml.Node
	own := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, null, ok := d.keyName(k, path, keys)
		if !ok {
			continue
		}
		id := name
		if isMerge(k) || null {
			id = "\x00" + k.ShortTag() + name // not a key of that name
		}
		switch {
		case own[id] && pathKey(name) == name:
			d.problem(k.Line, "", "%s is given twice", strconv.Quote(strings.TrimPrefix(path+"."+name, ".")))
			continue
		case own[id]:
			d.problem(k.Line, cmpOr(path, "the file"), "key %s is given twice", strconv.Quote(name))
			continue
		}
		own[id] = true
		switch {
		case null: // skipped, as yaml.v3 skipped it
		case isMerge(k):
			merges = append(merges, val)
		case !given[name]:
			given[name] = true
			*out = append(*out, fileEntry{name, k, val})
		}
	}
	for _, m := range merges {
		if m.Kind != yaml.SequenceNode { // a mapping, or an alias of one
			d.merge(m, path, keys, given, out)
			continue
		}
		if _, _, ok := d.visit(m, path); !ok {
			return
		}
		for _, item := range m.Content {
			d.merge(item, path, keys, given, out)
		}
	}
}

// merge adds the entries of m, merged into a mapping at path.
func (d *fileDecoder) merge(m *yaml.Node, path string, keys []string, given map[string]bool, out *[]fileEntry) {
	line := m.Line
	m, aliased, ok := d.visit(m, path)
	if !ok {
		return
	}
	defer d.leave(aliased)
	if m.Kind != yaml.MappingNode {
		d.problem(line, cmpOr(path, "the file"), "%s cannot be merged; merge a mapping or a list of mappings", describe(m))
		return
	}
	d.collect(m, path, keys, given, out)
}

// keyName returns the text of key k of a mapping at path, read as yaml.v3
// reads a key into a string (an alias followed, !!binary decoded), and
// whether k is null; ok is false for a key that is not text (a problem).
func (d *fileDecoder) keyName(k *yaml.Node, path string, keys []string) (name string, null, ok bool) {
	if r := resolve(k); r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null" {
		return r.Value, true, true
	}
	if err := k.Decode(&name); err != nil {
		fix := "use a name"
		if keys != nil {
			fix = "use " + strings.Join(keys, ", ")
		}
		d.problem(k.Line, cmpOr(path, "the file"), "%s is not a key; %s", describe(resolve(k)), fix)
		return "", false, false
	}
	return name, false, true
}

// resolve returns the node an alias stands for, n itself when n is not an
// alias.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// pathKey is key as a step of a path: as it is when it is a plain name,
// quoted otherwise, so no key read from the file breaks the error's line.
func pathKey(key string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_/<", r)
	}
	if key == "" || strings.IndexFunc(key, func(r rune) bool { return !plain(r) }) >= 0 {
		return strconv.Quote(key)
	}
	return key
}

// wholeInFile marks a value a file sets whole: a latency's p50 and p99 are
// one distribution, so a file that gives one gives the other as 0.
type wholeInFile interface{ wholeInFile() }

func (*Latency) wholeInFile() {}

var durationType = reflect.TypeFor[time.Duration]()

// decodeOnto writes n over v (see [Config.DecodeFile]), noting each problem
// with its line and key path.
func (d *fileDecoder) decodeOnto(n *yaml.Node, v reflect.Value, path string) {
	line := n.Line // where the file gives it, an alias too
	n, aliased, ok := d.visit(n, path)
	if !ok {
		return
	}
	defer d.leave(aliased)
	bad := func(format string, args ...any) { d.problem(line, cmpOr(path, "the file"), format, args...) }
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if n.ShortTag() == "!!null" || (v.Kind() == reflect.String && n.Kind == yaml.ScalarNode && n.Value == "") {
		return // as if the key were absent
	}
	if _, ok := v.Addr().Interface().(wholeInFile); ok {
		v.SetZero()
	}
	switch {
	case v.Kind() == reflect.Struct || v.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("%s is not a mapping of keys to values", describe(n))
			return
		}
		var keys []string
		if v.Kind() == reflect.Struct || v.Type().Elem().Kind() == reflect.Struct {
			keys = fileKeys(v)
		}
		d.decodeEntries(d.entries(n, path, keys), v, path)
	case v.Type() == durationType:
		if dur, err := config.ParseDuration(n.Value); err != nil {
			bad("%v", err)
		} else {
			v.SetInt(int64(dur))
		}
	case v.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		v.SetZero() // a list replaces the setting whole; an empty list leaves it nil
		for i, item := range n.Content {
			e := reflect.New(v.Type().Elem()).Elem()
			d.decodeOnto(item, e, fmt.Sprintf("%s[%d]", path, i))
			v.Set(reflect.Append(v, e))
		}
	default:
		if err := n.Decode(v.Addr().Interface()); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) {
				bad("%s is not %s", describe(n), kindName(v.Type()))
			} else {
				bad("%s", strings.Join(strings.Fields(err.Error()), " "))
			}
		}
	}
}

// decodeEntries writes a mapping's entries over v, a struct or a map. A
// map of mappings is refined entry by entry and takes only the keys it
// has; a map of plain values is replaced whole.
func (d *fileDecoder) decodeEntries(entries []fileEntry, v reflect.Value, path string) {
	keys := fileKeys(v)
	plain := v.Kind() == reflect.Map && v.Type().Elem().Kind() != reflect.Struct
	if plain {
		v.Set(reflect.MakeMap(v.Type())) // replaced whole, not merged
	}
	for _, e := range entries {
		sub := strings.TrimPrefix(path+"."+pathKey(e.name), ".")
		switch {
		case plain:
			x := reflect.New(v.Type().Elem()).Elem()
			d.decodeOnto(e.val, x, sub)
			v.SetMapIndex(reflect.ValueOf(e.name), x)
		case path == "" && e.name == "profile": // applied first; checked here
			var name string
			d.decodeOnto(e.val, reflect.ValueOf(&name).Elem(), sub)
		case !slices.Contains(keys, e.name):
			d.problem(e.key.Line, cmpOr(path, "the file"), "unknown key %s; use %s", strconv.Quote(e.name), strings.Join(keys, ", "))
		case v.Kind() == reflect.Map && resolve(e.val).ShortTag() == "!!null":
			d.problem(e.val.Line, sub, "no settings; give some or leave the key out")
		case v.Kind() == reflect.Map:
			x := reflect.New(v.Type().Elem()).Elem()
			x.Set(v.MapIndex(reflect.ValueOf(e.name)))
			d.decodeOnto(e.val, x, sub)
			v.SetMapIndex(reflect.ValueOf(e.name), x)
		default:
			d.decodeOnto(e.val, v.Field(slices.Index(fieldKeys(v.Type()), e.name)), sub)
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
