package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/config"
)

func TestUpdateRefusesAFileChangedSinceItsLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if _, err := config.Update(path, func(f *config.File) error {
		f.Contexts = map[string]*config.Context{"a": config.BuiltinLocal()}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A writer that does not take the lock (an editor) saves while the
	// change is being made.
	_, err := config.Update(path, func(f *config.File) error {
		f.Contexts["b"] = config.BuiltinLocal()
		return os.WriteFile(path, []byte("contexts:\n  a: {store: {local: {}}}\n  e: {store: {local: {}}}\n"), 0o600)
	})
	if !errors.Is(err, config.ErrChanged) {
		t.Fatalf("the change was saved over the other writer's: %v", err)
	}
	c, _ := config.Load(path)
	if _, ok := c.Contexts["e"]; !ok {
		t.Error("the other writer's context lost")
	}
	// Retried, it loads afresh and keeps both.
	if _, err := config.Update(path, func(f *config.File) error {
		f.Contexts["b"] = config.BuiltinLocal()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	d, _ := config.Load(path)
	if len(d.Contexts) != 3 {
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
	env := map[string]string{"XDG_STATE_HOME": "/xdg/state"}
	p, err := c.LocalStorePathFrom(func(k string) string { return env[k] })
	if err != nil || p != "/xdg/state/koshactl/local.db" {
		t.Errorf("local store path = %q, %v", p, err)
	}
}

func TestLoadRejectsContradictions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("contexts:\n  x:\n    store:\n      local: {}\n      dynamodb: {table: t, region: r}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Context("x"); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("both stores accepted: %v", err)
	}
	if err := os.WriteFile(path, []byte("contexts:\n  x:\n    max-override: forever\n    store: {local: {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("bad duration accepted: %v", err)
	}
}

// A max-override out of breaker's range is refused where a context is used
// (naming the file's line, the key and the fix) and where it is written: 2s
// is under the 5s minimum override, so no force-open could succeed on that
// context. The other contexts of the file stay usable.
func TestMaxOverrideRangeAtLoadAndSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"2s", false}, {"59s", false}, {"721h", false}, {"1m", true}, {"720h", true}} {
		data := "current-context: dev\ncontexts:\n  dev:\n    store: {local: {}}\n    max-override: " + tc.value + "\n  prod:\n    store: {local: {}}\n"
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := config.Load(path)
		if err != nil {
			t.Fatalf("max-override %s in one context refused the whole file: %v", tc.value, err)
		}
		if _, err := f.Context("prod"); err != nil {
			t.Errorf("max-override %s of dev refused prod: %v", tc.value, err)
		}
		_, err = f.Context("dev")
		if tc.ok {
			if err != nil || f.Invalid("dev") != nil {
				t.Errorf("max-override %s refused: %v", tc.value, err)
			}
			continue
		}
		if !errors.Is(err, config.ErrInvalid) || !errors.Is(err, config.ErrMaxOverrideRange) ||
			!strings.Contains(err.Error(), path+": line 5: ") || !strings.Contains(err.Error(), "max-override "+tc.value) ||
			!strings.Contains(err.Error(), "between 1m and 720h") ||
			!strings.Contains(err.Error(), "fix it with koshactl config set-context dev --max-override 24h") {
			t.Errorf("max-override %s at use: %v", tc.value, err)
		}
		if f.Invalid("dev") == nil || f.Invalid("dev").Error() != err.Error() {
			t.Errorf("Invalid(dev) = %v, Context's error %v", f.Invalid("dev"), err)
		}
		if c, ok := f.Lookup("dev"); !ok || c.MaxOverride.Std().String() == "0s" {
			t.Errorf("Lookup(dev) = %+v, %v: the invalid context must still be shown", c, ok)
		}
	}
}

// Update carries a context Load found invalid when it is unchanged (a change
// to another context is not refused for it, nor drops it), refuses it once
// changed but still invalid, and accepts it repaired.
func TestUpdateCarriesAnInvalidContextUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	data := "contexts:\n  dev:\n    store: {local: {}}\n    max-override: 2s\n  prod:\n    store: {local: {}}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Update(path, func(f *config.File) error {
		f.CurrentContext = "prod"
		f.Contexts["prod"].Protected = true
		return nil
	}); err != nil {
		t.Fatalf("a change to prod refused for dev: %v", err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := f.Lookup("dev"); !ok || c.MaxOverride.Std() != 2*time.Second || f.Invalid("dev") == nil {
		t.Fatalf("dev after saving prod: %+v, %v, %v", c, ok, f.Invalid("dev"))
	}
	if c, err := f.Context("prod"); err != nil || !c.Protected {
		t.Fatalf("prod after save: %+v, %v", c, err)
	}
	if _, err := config.Update(path, func(f *config.File) error {
		f.Contexts["dev"].MaxOverride = config.Duration(3 * time.Second)
		return nil
	}); !errors.Is(err, config.ErrMaxOverrideRange) {
		t.Errorf("save of dev changed to another invalid max-override: %v", err)
	}
	f, err = config.Update(path, func(f *config.File) error {
		f.Contexts["dev"].MaxOverride = config.Duration(4 * time.Hour)
		return nil
	})
	if err != nil {
		t.Fatalf("save of the repaired dev: %v", err)
	}
	if _, err := f.Context("dev"); err != nil || f.Invalid("dev") != nil {
		t.Errorf("dev still refused after its repair was saved: %v", err)
	}
	f, err = config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := f.Context("dev"); err != nil || c.MaxOverride.Std() != 4*time.Hour {
		t.Errorf("repaired dev reloads as %+v, %v", c, err)
	}
}

func TestUpdateRefusesANewInvalidContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.yaml")
	_, err := config.Update(path, func(f *config.File) error {
		f.Contexts = map[string]*config.Context{"dev": {Store: config.StoreConfig{Local: &config.LocalStore{}}, MaxOverride: config.Duration(2 * time.Second)}}
		return nil
	})
	if !errors.Is(err, config.ErrMaxOverrideRange) {
		t.Errorf("save of max-override 2s: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a refused save wrote the file: %v", err)
	}
}

// mcp.read-only is read strictly: true marks the context, a misspelled key
// or a value that is not a boolean is an error naming it, never a context
// that silently offers agents the proposal tools.
func TestMCPReadOnlyIsReadStrictly(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		yaml string
		ok   bool
	}{
		"set":        {"contexts:\n  x:\n    store: {local: {}}\n    mcp: {read-only: true}\n", true},
		"misspelled": {"contexts:\n  x:\n    store: {local: {}}\n    mcp: {readonly: true}\n", false},
		"not a bool": {"contexts:\n  x:\n    store: {local: {}}\n    mcp: {read-only: maybe}\n", false},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := config.Load(path)
		if !tc.ok {
			if err == nil {
				t.Errorf("%s: loaded", name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c, err := f.Context("x")
		if err != nil || !c.MCP.ReadOnly {
			t.Errorf("%s: %+v %v, want read-only", name, c, err)
		}
	}
}

func TestCheckMaxOverride(t *testing.T) {
	for d, ok := range map[time.Duration]bool{
		0: false, 2 * time.Second: false, 5 * time.Second: false, 59 * time.Second: false,
		time.Minute: true, 24 * time.Hour: true, 720 * time.Hour: true, 720*time.Hour + time.Second: false,
	} {
		err := config.CheckMaxOverride(d)
		if ok != (err == nil) || !ok && (!errors.Is(err, config.ErrMaxOverrideRange) || !strings.Contains(err.Error(), "between 1m and 720h")) {
			t.Errorf("CheckMaxOverride(%s) = %v", d, err)
		}
	}
}

// Issue 45: a request timeout can be set per context, in range; one out of
// range is refused where the context is used, naming the line and the fix.
func TestRequestTimeoutRange(t *testing.T) {
	for _, d := range []time.Duration{0, 999 * time.Millisecond, time.Hour + time.Second, -time.Second} {
		if err := config.CheckRequestTimeout(d); err == nil || !strings.Contains(err.Error(), "give a duration from 1s to 1h") {
			t.Errorf("CheckRequestTimeout(%s) = %v", d, err)
		}
	}
	for _, d := range []time.Duration{time.Second, 30 * time.Second, time.Hour} {
		if err := config.CheckRequestTimeout(d); err != nil {
			t.Errorf("CheckRequestTimeout(%s) = %v", d, err)
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	for value, ok := range map[string]bool{"45s": true, "1h": true, "500ms": false, "2h": false} {
		data := "contexts:\n  dev:\n    store: {local: {}}\n    request-timeout: " + value + "\n"
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := f.Context("dev")
		if ok {
			if err != nil || c.RequestTimeout.Std().String() != map[string]string{"45s": "45s", "1h": "1h0m0s"}[value] {
				t.Errorf("request-timeout %s: %v, %v", value, c, err)
			}
			continue
		}
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), path+": line 4: ") ||
			!strings.Contains(err.Error(), "fix it with koshactl config set-context dev --request-timeout 30s") {
			t.Errorf("request-timeout %s: %v", value, err)
		}
	}
}
