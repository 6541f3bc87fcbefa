package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A drill that meets a malformed override (written by another tool) names
// the problem in its assert step, reads the item as the data plane does (an
// unreadable expiry holds it), and clears it in one step.
func TestDrillFlagsAndClearsAMalformedOverride(t *testing.T) {
	e := newEnv(t)
	now := time.Now().UnixMilli()
	if err := e.Store.Put(context.Background(), store.Item{store.PK: "breaker#openai", "state": "forced_open",
		"reason": "by hand", "actor": "ops@cli", "created_at": now, "expires_at": "tomorrow", "version": 1.5}, store.Always()); err != nil {
		t.Fatal(err)
	}
	d := parse(t, `
name: malformed-override
timeout: 1m
steps:
  - id: chk
    assert: {breaker: {dependency: openai, state: forced_open, source: store}}
  - id: clear
    breaker.clear: {dependency: openai, reason: cleanup}
  - id: gone
    assert: {breaker: {dependency: openai, state: not_forced, source: store}}
`)
	j, log := e.run(context.Background(), d)
	if j.ExitCode != exitcode.OK {
		t.Fatalf("outcome %s (exit %d): %s\n%s", j.Outcome, j.ExitCode, j.Reason, log)
	}
	chk := j.Steps[0].Detail
	for _, want := range []string{"forced open by ops@cli", `expires_at: found S "tomorrow"`, "version: found N 1.5", "in force until cleared"} {
		if !strings.Contains(chk, want) {
			t.Errorf("assert detail lacks %q: %s", want, chk)
		}
	}
	// The step "gone" passed: the clear removed it in one step. The rollback
	// then puts back what was there before the drill, as the data plane read
	// it: forced open by ops@cli, no expiry (its expiry was unreadable).
	o, err := e.Overrides.Get(context.Background(), "openai")
	if err != nil || o.Malformed() || o.Actor != "ops@cli" || o.Expires() || len(j.Rollbacks) != 1 ||
		!strings.Contains(j.Rollbacks[0].Detail, "restored the override held by ops@cli") {
		t.Errorf("after rollback: %+v, %v; rollbacks %+v", o, err, j.Rollbacks)
	}
}

// The conflict a drill meets on a malformed override someone holds is
// worded for the drill file (overwrite: true), never with the CLI's flag.
func TestDrillConflictOnAMalformedOverrideNamesTheDrillKey(t *testing.T) {
	e := newEnv(t)
	if err := e.Store.Put(context.Background(), store.Item{store.PK: "breaker#openai", "state": "forced_open",
		"reason": "by hand", "actor": "ops@cli", "created_at": time.Now().UnixMilli(), "expires_at": "tomorrow", "version": 1.5}, store.Always()); err != nil {
		t.Fatal(err)
	}
	d := parse(t, `
name: malformed-conflict
timeout: 1m
steps:
  - breaker.force-open: {dependency: openai}
`)
	j, log := e.run(context.Background(), d)
	msg := j.Steps[0].Error
	if j.ExitCode != exitcode.Error || !strings.Contains(msg, "the item is malformed (expires_at: ") ||
		!strings.Contains(msg, "set overwrite: true to replace it") || strings.Contains(msg, "--") {
		t.Fatalf("exit %d, step error %q\n%s", j.ExitCode, msg, log)
	}
}
