package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

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
