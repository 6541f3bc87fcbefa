package config_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kosha-platform/koshactl/internal/config"
)

// FuzzLoad feeds arbitrary bytes to the config file parser. Load must never
// panic, and must refuse anything it cannot use with ErrInvalid. A file it
// accepts must save, and the saved file must load back to the same contexts
// and save again to the same bytes: koshactl config set-context rewrites the
// file, and must not change what an operator wrote beyond its formatting.
//
//	go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime 20s ./internal/config
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"",
		"current-context: prod\n",
		"contexts:\n  local:\n    store: {local: {}}\n",
		"current-context: staging\ncontexts:\n  staging:\n    store:\n      dynamodb: {table: kosha-control, region: eu-west-1, profile: ops}\n" +
			"    protected: true\n    max-override: 4h\n    dependencies: [openai, core-api]\n" +
			"    chaos: {secret-id: kosha/chaos/staging, targets: [openai]}\n" +
			"    metrics: {cloudwatch: {namespace: Kosha, region: eu-west-1}}\n" +
			"    ratelimit: {capacity: 40, refill-per-second: 0.5}\n",
		"contexts:\n  dev:\n    store:\n      dynamodb: {table: t, region: r, endpoint-url: 'http://127.0.0.1:8000', static-credentials: true}\n" +
			"    chaos: {key-file: /etc/kosha/chaos.key, key-env: CHAOS_KEY}\n    metrics: {prometheus: {url: 'http://127.0.0.1:9090/metrics'}}\n",
		"contexts:\n  x:\n    store:\n      local: {}\n      dynamodb: {table: t, region: r}\n",
		"contexts:\n  x:\n    max-override: forever\n",
		"contexts:\n  x:\n",
		"contexts:\n  'bad name':\n    store: {local: {}}\n",
		"unknown: 1\n",
		"contexts: &a\n  x: *a\n",
		"contexts:\n  x:\n    ratelimit: {capacity: .nan}\n",
		"---\ncurrent-context: a\n---\ncurrent-context: b\n",
	} {
		f.Add([]byte(seed))
	}
	// One file per fuzzing process, rewritten by every input (inputs run one
	// at a time in a process): a directory per input would halve the rate.
	path := filepath.Join(f.TempDir(), "config.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := config.Load(path)
		if err != nil {
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("Load refused %q with %v, which does not match ErrInvalid", data, err)
			}
			return
		}
		if _, err := config.Update(path, func(*config.File) error { return nil }); err != nil {
			t.Fatalf("Load accepted %q but saving it failed: %v", data, err)
		}
		saved := readFile(t, path)
		reloaded, err := config.Load(path)
		if err != nil {
			t.Fatalf("Load accepted %q, saved it as %q, which does not load: %v", data, saved, err)
		}
		if reloaded.CurrentContext != loaded.CurrentContext || !sameContexts(loaded.Contexts, reloaded.Contexts) {
			t.Fatalf("Load accepted %q, saved it as %q, which loads differently:\n%#v\n%#v", data, saved, loaded, reloaded)
		}
		if _, err := config.Update(path, func(*config.File) error { return nil }); err != nil {
			t.Fatalf("saving the reloaded file: %v", err)
		}
		if again := readFile(t, path); !bytes.Equal(again, saved) {
			t.Fatalf("saving is not stable: %q then %q", saved, again)
		}
	})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameContexts compares contexts field by field, with an empty list equal to
// no list and a NaN rate-limit setting equal to itself (YAML's .nan loads,
// and saves as .nan).
func sameContexts(a, b map[string]*config.Context) bool {
	norm := func(m map[string]*config.Context) map[string]config.Context {
		out := make(map[string]config.Context, len(m))
		for name, c := range m {
			v := *c
			// An empty list saves as no list (omitempty): the same setting.
			if len(v.Dependencies) == 0 {
				v.Dependencies = nil
			}
			if len(v.Chaos.Targets) == 0 {
				v.Chaos.Targets = nil
			}
			if math.IsNaN(v.RateLimit.Capacity) {
				v.RateLimit.Capacity = -1
			}
			if math.IsNaN(v.RateLimit.RefillPerSecond) {
				v.RateLimit.RefillPerSecond = -1
			}
			out[name] = v
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
