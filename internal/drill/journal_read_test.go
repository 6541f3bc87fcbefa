package drill_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

func journalFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.journal.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// StreamJournal reads what encoding/json reads: every field, lists element
// by element, a key in another case, a repeated key's last value, unknown
// keys skipped.
func TestStreamJournalReadsWhatUnmarshalReads(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	j := drill.Journal{Kind: "DrillRun", Version: drill.JournalVersion, RunID: "r1", Context: "local", Outcome: drill.OutcomeStopped,
		Drill:     drill.DrillInfo{Name: "d", File: "d.yaml"},
		StartedAt: t0, EndedAt: drill.TimePtr(t0.Add(time.Minute)), RollbacksOK: true, ExitCode: 1,
		Preflight:  []drill.CheckRecord{{Phase: drill.PhasePreflight, Name: "p", StartedAt: t0}},
		Hypothesis: drill.Hypothesis{Before: []drill.CheckRecord{{Name: "b", OK: true}}, After: []drill.CheckRecord{{Name: "a"}}, AfterSkipped: "x"},
		Steps: []drill.StepRecord{{ID: "s1", Outputs: map[string]string{"k": "v"}, Rollbacks: []string{"rb-1"}, Log: []string{"l"},
			Fleet: &drill.FleetRecord{Goal: "forced"}}},
		Stop:            &drill.StopRecord{Condition: "c", Alarms: []drill.Alarm{{Name: "a"}}},
		Rollbacks:       []drill.RollbackRecord{{ID: "rb-1", Lever: &drill.LeverRecord{Kind: drill.LeverOverride, Dependency: "openai"}}},
		Notices:         []string{"n1", "n2"},
		Recoveries:      []drill.RecoveryRecord{{Actor: "ops", Rollbacks: []string{"rb-1"}}},
		GaugeSamples:    []drill.GaugeSample{{At: t0, Dependency: "openai", Instances: []drill.InstanceSample{{Instance: "gw-1", State: "open"}}}},
		StopEvaluations: []drill.StopEvaluation{{At: t0, Condition: "c", Holds: true}},
		Audit:           []drill.AuditRef{{ID: "01", Action: "breaker.force_open"}},
	}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	// A key in another case, a repeated list (the last wins), an unknown key.
	body := strings.Replace(string(b), `"run_id"`, `"RUN_ID"`, 1)
	body = strings.Replace(body, `{"kind"`, `{"notices":["dropped"],"future_field":{"a":[1,2,{"b":null}]},"kind"`, 1)
	for name, keep := range map[string]func(any) bool{"nil keep": nil, "keep all": func(any) bool { return true }} {
		got, err := drill.StreamJournal(journalFile(t, body), keep)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want drill.Journal
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: streamed\n%+v\nwant\n%+v", name, *got, want)
		}
	}
	// keep sees each element, may change it, and decides what is kept.
	var seen []string
	got, err := drill.StreamJournal(journalFile(t, string(b)), func(e any) bool {
		seen = append(seen, reflect.TypeOf(e).String())
		if n, ok := e.(*string); ok {
			*n = strings.ToUpper(*n)
			return *n != "N2"
		}
		_, sample := e.(*drill.GaugeSample)
		return !sample
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Notices, []string{"N1"}) || got.GaugeSamples != nil || len(got.Steps) != 1 {
		t.Errorf("notices %q, samples %v, steps %d", got.Notices, got.GaugeSamples, len(got.Steps))
	}
	wantSeen := []string{"*drill.CheckRecord", "*drill.CheckRecord", "*drill.CheckRecord", "*drill.StepRecord", "*drill.RollbackRecord",
		"*string", "*string", "*drill.RecoveryRecord", "*drill.GaugeSample", "*drill.StopEvaluation", "*drill.AuditRef"}
	if !reflect.DeepEqual(seen, wantSeen) {
		t.Errorf("keep saw %q\nwant %q", seen, wantSeen)
	}
}

func TestStreamJournalRefusals(t *testing.T) {
	ok := `{"kind":"DrillRun","version":2,"run_id":"r","drill":{"name":"d"}}`
	for name, c := range map[string]struct{ body, want string }{
		"not json":       {"<html>", "is not a drill journal"},
		"trailing data":  {ok + `{"kind":"x"}`, "is not a drill journal: invalid data after the top-level value"},
		"a list":         {`[1]`, "is not a drill journal"},
		"steps not list": {`{"kind":"DrillRun","steps":{"id":"s"}}`, "is not a drill journal: steps: want a list"},
		"other kind":     {`{"kind":"Other"}`, `is not a drill journal (kind "Other")`},
		"truncated":      {ok[:40], "is not a drill journal"},
		"newer":          {strings.Replace(ok, `"version":2`, `"version":99`, 1), "journal version 99 is newer than this koshactl reads"},
	} {
		_, err := drill.StreamJournal(journalFile(t, c.body), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if j, err := drill.StreamJournal(journalFile(t, ok), nil); err != nil || j.RunID != "r" {
		t.Errorf("a minimal journal: %v", err)
	}
	// Over the cap: refused before a byte is parsed.
	big := journalFile(t, ok)
	if err := os.Truncate(big, 64<<20+1); err != nil {
		t.Fatal(err)
	}
	if _, err := drill.StreamJournal(big, nil); !errors.Is(err, fsutil.ErrTooLarge) {
		t.Errorf("a 64 MiB + 1 journal: %v", err)
	}
	if _, err := drill.StreamJournal(t.TempDir(), nil); !errors.Is(err, fsutil.ErrNotRegular) {
		t.Errorf("a directory: %v", err)
	}
}
