package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/config"
)

func TestSaveRefusesAFileChangedSinceLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	a, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := config.Load(path)
	a.Contexts = map[string]*config.Context{"a": config.BuiltinLocal()}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	b.Contexts = map[string]*config.Context{"b": config.BuiltinLocal()}
	if err := b.Save(); !errors.Is(err, config.ErrChanged) {
		t.Fatalf("second writer saved over the first: %v", err)
	}
	c, _ := config.Load(path)
	if _, ok := c.Contexts["a"]; !ok {
		t.Error("first writer's context lost")
	}
	// Reload and retry succeeds and keeps both.
	c.Contexts["b"] = config.BuiltinLocal()
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	d, _ := config.Load(path)
	if len(d.Contexts) != 2 {
		t.Errorf("contexts = %v", d.Names())
	}
}

func TestContextDefaults(t *testing.T) {
	c := config.BuiltinLocal()
	if c.MaxOverrideDuration() != 24*time.Hour {
		t.Errorf("max override = %s", c.MaxOverrideDuration())
	}
	if got := c.KnownDependencies(); len(got) != 4 || got[0] != "core-api" {
		t.Errorf("deps = %v", got)
	}
	t.Setenv("KOSHACTL_STATE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	p, err := c.LocalStorePath()
	if err != nil || p != "/xdg/state/koshactl/local.db" {
		t.Errorf("local store path = %q, %v", p, err)
	}
}

func TestLoadRejectsContradictions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("contexts:\n  x:\n    store:\n      local: {}\n      dynamodb: {table: t, region: r}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("both stores accepted: %v", err)
	}
	if err := os.WriteFile(path, []byte("contexts:\n  x:\n    max-override: forever\n    store: {local: {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("bad duration accepted: %v", err)
	}
}

// A max-override out of breaker's range is refused where a context is read
// (naming the file's line and the key) and where it is written: 2s is under
// the 5s minimum override, so no force-open could succeed on that context.
func TestMaxOverrideRangeAtLoadAndSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"2s", false}, {"59s", false}, {"721h", false}, {"1m", true}, {"720h", true}} {
		data := "current-context: dev\ncontexts:\n  dev:\n    store: {local: {}}\n    max-override: " + tc.value + "\n"
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := config.Load(path)
		if tc.ok {
			if err != nil {
				t.Errorf("max-override %s refused: %v", tc.value, err)
			}
			continue
		}
		if !errors.Is(err, config.ErrInvalid) || !errors.Is(err, breaker.ErrMaxOverrideRange) ||
			!strings.Contains(err.Error(), path+": line 5: ") || !strings.Contains(err.Error(), "max-override "+tc.value) ||
			!strings.Contains(err.Error(), "between 1m and 720h") {
			t.Errorf("max-override %s at load: %v", tc.value, err)
		}
		if f != nil {
			t.Errorf("max-override %s: a file was returned", tc.value)
		}
	}

	f, err := config.Load(filepath.Join(t.TempDir(), "new.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f.Contexts = map[string]*config.Context{"dev": {Store: config.StoreConfig{Local: &config.LocalStore{}}, MaxOverride: config.Duration(2 * time.Second)}}
	if err := f.Save(); !errors.Is(err, breaker.ErrMaxOverrideRange) {
		t.Errorf("save of max-override 2s: %v", err)
	}
	if _, err := os.Stat(f.Path()); !os.IsNotExist(err) {
		t.Errorf("a refused save wrote the file: %v", err)
	}
}
