package levers_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/levers"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
)

var (
	t0    = time.Date(2026, 12, 5, 1, 59, 50, 0, time.UTC)
	rules = levers.Rules{Context: "prod", Known: []string{"postgres", "openai", "core-api"}, MaxOverride: 4 * time.Hour}
)

const smallest = `version: 1
context: prod
windows:
  - dependency: postgres
    reason: RDS minor upgrade (CHG-1042)
    start: 2026-12-05T02:00:00Z
    end: 2026-12-05T02:30:00Z
`

func parse(t *testing.T, src string) *levers.File {
	t.Helper()
	f, err := levers.Parse("levers/prod.yaml", []byte(src), rules)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTheSmallestFile(t *testing.T) {
	f := parse(t, smallest)
	if f.Name != "prod" || len(f.Windows) != 1 {
		t.Fatalf("file %+v", f)
	}
	w := f.Windows[0]
	if w.ID != "postgres@2026-12-05T02:00:00Z" || w.Duration() != 30*time.Minute || w.Line != 4 {
		t.Errorf("window %+v", w)
	}
	for at, want := range map[time.Time]bool{t0: false, t0.Add(10 * time.Second): true, t0.Add(10*time.Second + 30*time.Minute): false} {
		if _, _, ok := w.At(at); ok != want {
			t.Errorf("in force at %s = %v, want %v", at, ok, want)
		}
	}
}

// Bad input: each problem with its line and fix; nothing of the file is
// kept.
func TestEveryProblemIsReportedWithItsLine(t *testing.T) {
	src := `version: 1
context: prod
windows:
  - dependency: postgres
    reason: upgrade
    start: 2026-12-05T02:00:00Z
    end: 2026-12-05T03:00:00Z
  - dependency: postgres
    reason: overlapping
    start: 2026-12-05T02:30:00Z
    duration: 1h
  - dependency: openai
    reason: too long
    start: 2026-12-05T02:00:00Z
    duration: 5h
  - dependency: core-api
    reason: backwards
    start: 2026-12-05T02:00:00Z
    end: 2026-12-05T01:00:00Z
  - dependency: postgress
    reason: typo
    start: 2026-12-06T02:00:00Z
    duration: 10m
  - dependency: openai
    reason: no zone
    start: 2026-12-07T02:00:00
    duration: 10m
  - dependency: postgres
    reason: weekly, overlapping the second window on its second week
    start: 2026-11-28T03:15:00Z
    duration: 30m
    repeat: weekly
`
	_, err := levers.Parse("prod.yaml", []byte(src), rules)
	var pe *levers.ProblemsError
	if !errors.As(err, &pe) || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("err %v (exit %d), want problems (exit 2)", err, exitcode.Of(err))
	}
	want := []string{
		"prod.yaml:8: this window of postgres overlaps the one at line 4",
		"prod.yaml:15: the window lasts 5h0m0s, longer than the context's max-override 4h0m0s",
		"prod.yaml:19: the window ends (2026-12-05T01:00:00Z) before it starts",
		`prod.yaml:20: unknown dependency "postgress"`,
		`prod.yaml:26: start "2026-12-07T02:00:00" has no time zone: write 2026-12-07T02:00:00Z`,
		"prod.yaml:28: this window of postgres overlaps the one at line 8",
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("the problems lack %q:\n%s", w, msg)
		}
	}
	if n := len(pe.Problems); n != len(want) {
		t.Errorf("%d problems, want %d:\n%s", n, len(want), msg)
	}
}

func TestWeeklyWindowRecurs(t *testing.T) {
	f := parse(t, `version: 1
context: prod
windows:
  - id: sunday-vacuum
    dependency: postgres
    reason: weekly vacuum
    start: 2026-11-29T03:00:00Z
    duration: 20m
    repeat: weekly
`)
	w := f.Windows[0]
	for at, want := range map[string]bool{"2026-11-29T03:10:00Z": true, "2026-12-06T03:19:59Z": true, "2026-12-06T03:20:00Z": false,
		"2026-12-13T03:00:00Z": true, "2026-11-22T03:10:00Z": false} {
		ts, _ := time.Parse(time.RFC3339, at)
		if _, _, ok := w.At(ts); ok != want {
			t.Errorf("weekly window in force at %s = %v, want %v", at, ok, want)
		}
	}
}

// env is a table on the embedded store, a fake clock and an audit log.
type env struct {
	clk *clocktest.Fake
	ov  *breaker.Overrides
	log *audit.Log
	st  *sqlite.Store
}

func newEnv(t *testing.T) env {
	s := sqlitetest.NewStore(t)
	clk := clocktest.NewFake(t0)
	return env{clk: clk, ov: breaker.NewOverrides(s, clk), log: audit.NewLog(s, clk, "prod"), st: s}
}

// apply is one round of the reconciler: compare, plan, write.
func (e env) apply(t *testing.T, f *levers.File, statuses []metrics.DependencyStatus) []levers.Difference {
	t.Helper()
	ctx := context.Background()
	list, _, err := e.ov.ListForWith(ctx, rules.Known, nil)
	if err != nil {
		t.Fatal(err)
	}
	written, err := f.Written(ctx, e.log, list)
	if err != nil {
		t.Fatal(err)
	}
	diffs := levers.Compare(f, levers.State{Now: e.clk.Now(), Overrides: list, Statuses: statuses, Written: written})
	if _, err := levers.Apply(ctx, levertest.Levers(e.st, e.clk, e.log), f.Plan(diffs, "ci@example.com")); err != nil {
		t.Fatal(err)
	}
	return diffs
}

func (e env) override(t *testing.T, dep string) *breaker.Override {
	t.Helper()
	o, err := e.ov.Get(context.Background(), dep)
	if err != nil {
		return nil
	}
	return &o
}

func kinds(ds []levers.Difference) string {
	var k []string
	for _, d := range ds {
		k = append(k, d.Dependency+":"+d.Kind)
	}
	return strings.Join(k, " ")
}

// The scenario on a fake clock: a window 10 s ahead opens at its
// start, expires at its end on its own, and closes; an incident override on
// another dependency is reported and left alone.
func TestWindowOpensAndClosesAndIncidentLeversAreLeftAlone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := levertest.Force(ctx, e.st, e.clk, e.log, levertest.Req{Dependency: "openai", Reason: "INC-7 provider outage", Actor: "oncall",
		For: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	f := parse(t, smallest)
	if ds := e.apply(t, f, nil); kinds(ds) != "openai:unplanned_override" {
		t.Errorf("before the window: %s", kinds(ds))
	}
	if e.override(t, "postgres") != nil {
		t.Fatal("postgres forced before its window")
	}
	e.clk.Advance(10 * time.Second)
	if ds := e.apply(t, f, nil); kinds(ds) != "openai:unplanned_override postgres:window_not_applied" {
		t.Errorf("at the window's start: %s", kinds(ds))
	}
	o := e.override(t, "postgres")
	end := time.Date(2026, 12, 5, 2, 30, 0, 0, time.UTC)
	if o == nil || !o.ActiveAt(e.clk.Now()) || !o.ExpiresAt.Equal(end) || !strings.Contains(o.Reason, "RDS minor upgrade (CHG-1042)") {
		t.Fatalf("postgres override %+v, want forced until %s", o, end)
	}
	if m, ok := levers.MarkerOf(*o); !ok || m.File != "prod" || m.Window != f.Windows[0].ID {
		t.Errorf("marker %q", o.ManagedBy)
	}
	// In sync now: apply again changes nothing (idempotent).
	v := o.Version
	if ds := e.apply(t, f, nil); kinds(ds) != "openai:unplanned_override" {
		t.Errorf("after apply: %s", kinds(ds))
	}
	if e.override(t, "postgres").Version != v {
		t.Error("a second apply rewrote the override")
	}
	if e.override(t, "openai") == nil {
		t.Fatal("apply touched the incident override")
	}
	// The reconciler dies: at the window's end the override lapses alone.
	e.clk.Set(end)
	if o := e.override(t, "postgres"); o.ActiveAt(e.clk.Now()) {
		t.Error("the window's override is still in force at the window's end")
	}
}

// A window removed from the file, or edited, is noticed by its marker.
func TestRemovedAndEditedWindows(t *testing.T) {
	e := newEnv(t)
	e.clk.Advance(20 * time.Second)
	f := parse(t, smallest)
	e.apply(t, f, nil)
	// Edited: a new reason is a new hash; apply replaces the override.
	edited := parse(t, strings.Replace(smallest, "(CHG-1042)", "(CHG-1043)", 1))
	if ds := e.apply(t, edited, nil); kinds(ds) != "postgres:window_changed" {
		t.Errorf("edited: %s", kinds(ds))
	}
	if o := e.override(t, "postgres"); !strings.Contains(o.Reason, "CHG-1043") {
		t.Errorf("reason after the edit: %q", o.Reason)
	}
	// Removed: the managed override is cleared, and recorded.
	empty := parse(t, "version: 1\ncontext: prod\nname: prod\nwindows: []\n")
	if ds := e.apply(t, empty, nil); kinds(ds) != "postgres:window_ended" || !strings.Contains(ds[0].Detail, "was removed from the file") {
		t.Errorf("removed: %s %+v", kinds(ds), ds)
	}
	if e.override(t, "postgres") != nil {
		t.Error("the override of a removed window is still stored")
	}
	// Another file's override is not this file's to clear.
	other := parse(t, strings.Replace(smallest, "context: prod\n", "context: prod\nname: other\n", 1))
	e.apply(t, other, nil)
	if ds := e.apply(t, empty, nil); kinds(ds) != "postgres:unplanned_override" || e.override(t, "postgres") == nil {
		t.Errorf("another file's override: %s", kinds(ds))
	}
}

// The fleet's side: an override the fleet does not obey, and one that
// lapsed that it still reports forced.
func TestFleetDifferences(t *testing.T) {
	f := parse(t, "version: 1\ncontext: prod\nwindows: []\n")
	active := breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Actor: "oncall", Reason: "incident"}
	ds := levers.Compare(f, levers.State{Now: t0, Statuses: []metrics.DependencyStatus{
		{Dependency: "openai", Override: &active, OverrideActive: true, Fleet: &metrics.Convergence{Verdict: metrics.NotObeyed, Note: "gw-2 closed"}},
		{Dependency: "postgres", GaugeState: metrics.Forced},
		{Dependency: "core-api", GaugeState: metrics.Closed},
	}})
	if kinds(ds) != "openai:not_obeyed postgres:lapsed_still_forced" {
		t.Errorf("fleet differences: %s", kinds(ds))
	}
}

// The shipped example parses (for its own context) and plans what its
// comments say.
func TestTheExampleFileParses(t *testing.T) {
	data, err := os.ReadFile("../../docs/levers/prod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := levers.Parse("prod.yaml", data, levers.Rules{Context: "prod", Known: rules.Known})
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "prod-maintenance" || len(f.Windows) != 3 || f.Windows[2].Repeat != levers.RepeatWeekly {
		t.Errorf("example file: %+v", f)
	}
	at := time.Date(2026, 12, 9, 5, 10, 0, 0, time.UTC) // 06:10 at +01:00
	if _, _, ok := f.Windows[1].At(at); !ok {
		t.Error("the openai window is not in force at 05:10Z (06:10+01:00)")
	}
}

// YAML that reads two ways is refused: a key given twice (the parser kept
// the last; a reviewer reads the first), an alias (its node's value is the
// anchor's name: *postgres forced postgres where YAML says openai), and a
// second document (ignored: windows a reviewer saw were never applied).
func TestYAMLThatReadsTwoWaysIsRefused(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"duplicate key": {`version: 1
context: prod
windows:
  - dependency: postgres
    dependency: openai
    reason: upgrade
    start: 2026-12-05T02:00:00Z
    end: 2026-12-05T02:30:00Z
`, `p.yaml:5: "dependency" is given twice (first at line 4)`},
		"duplicate top-level key": {"version: 1\ncontext: prod\nwindows: []\nwindows: []\n", `p.yaml:4: "windows" is given twice`},
		"alias": {`version: 1
context: prod
windows:
  - dependency: &postgres openai
    reason: upgrade
    start: 2026-12-05T02:00:00Z
    end: 2026-12-05T02:30:00Z
  - dependency: *postgres
    reason: upgrade
    start: 2026-12-06T02:00:00Z
    end: 2026-12-06T02:30:00Z
`, "p.yaml:4: the YAML anchor &postgres"},
		"second document": {`version: 1
context: prod
windows: []
---
version: 1
context: prod
windows:
  - dependency: postgres
    reason: upgrade
    start: 2026-12-05T02:00:00Z
    end: 2026-12-05T02:30:00Z
`, "a second YAML document"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := levers.Parse("p.yaml", []byte(tc.src), rules)
			if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v (exit %d), want %q (exit 2)", err, exitcode.Of(err), tc.want)
			}
		})
	}
}

// A file of one window repeated lists a bounded number of problems (it
// listed one overlap per pair: 1 MiB of windows took the memory of the
// machine), and a file of more than MaxWindows windows is refused at once.
func TestProblemsOfAHostileFileAreBounded(t *testing.T) {
	one := "  - {dependency: postgres, reason: x, start: 2026-12-05T02:00:00Z, duration: 1m}\n"
	_, err := levers.Parse("p.yaml", []byte("version: 1\ncontext: prod\nwindows:\n"+strings.Repeat(one, 900)), rules)
	var pe *levers.ProblemsError
	if !errors.As(err, &pe) || len(pe.Problems) > 101 {
		t.Fatalf("900 copies of one window: %d problems listed, want at most 101", len(pe.Problems))
	}
	if last := pe.Problems[len(pe.Problems)-1].Msg; !strings.Contains(last, "more problem(s)") {
		t.Errorf("the last line %q does not count the problems left out", last)
	}
	_, err = levers.Parse("p.yaml", []byte("version: 1\ncontext: prod\nwindows:\n"+strings.Repeat(one, levers.MaxWindows+1)), rules)
	if !errors.As(err, &pe) || len(pe.Problems) != 1 || !strings.Contains(pe.Problems[0].Msg, "split the file") {
		t.Fatalf("%d windows: %v, want one problem: split the file", levers.MaxWindows+1, err)
	}
}

// A window is in whole seconds: an end finer than the override's stored
// milliseconds never matched its override, so every round replaced it (a
// write, a record and a notification a minute), and a request named the
// window in seconds.
func TestAWindowIsInWholeSeconds(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"end":      {"end: 2026-12-05T02:30:00Z", "end: 2026-12-05T02:30:00.0000001Z", "p.yaml:7: end \"2026-12-05T02:30:00.0000001Z\" has a fraction of a second"},
		"start":    {"start: 2026-12-05T02:00:00Z", "start: 2026-12-05T02:00:00.5Z", "p.yaml:6: start \"2026-12-05T02:00:00.5Z\" has a fraction of a second"},
		"duration": {"end: 2026-12-05T02:30:00Z", "duration: 1500ms", "p.yaml:7: duration \"1500ms\" has a fraction of a second"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := levers.Parse("p.yaml", []byte(strings.Replace(smallest, tc.from, tc.to, 1)), rules)
			if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A reason is what its override carries: a block scalar's final newline
// is not written into the override, and a reason of blanks is none.
func TestAReasonIsOneLineOfText(t *testing.T) {
	f := parse(t, strings.Replace(smallest, "reason: RDS minor upgrade (CHG-1042)", "reason: |\n      RDS minor upgrade (CHG-1042)", 1))
	if r := f.Windows[0].Reason; r != "RDS minor upgrade (CHG-1042)" {
		t.Errorf("reason %q, want it without its newline", r)
	}
	_, err := levers.Parse("p.yaml", []byte(strings.Replace(smallest, "reason: RDS minor upgrade (CHG-1042)", `reason: "   "`, 1)), rules)
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "the window has no reason") {
		t.Errorf("a reason of blanks: %v, want refused", err)
	}
}

// Weekly windows far from now: the week of the occurrence in force, and
// the overlap of two weekly windows, are computed in seconds (durations
// saturate at 292 years: a window weekly since 1700 was never in force,
// and two weekly windows of 2300 hours apart were taken to overlap).
func TestWeeklyWindowsFarFromNow(t *testing.T) {
	f := parse(t, `version: 1
context: prod
windows:
  - dependency: postgres
    reason: weekly since 1700
    start: 1700-01-05T02:00:00Z
    duration: 1h
    repeat: weekly
  - id: a
    dependency: openai
    reason: from 2300
    start: 2300-01-01T00:00:00Z
    duration: 1h
    repeat: weekly
  - id: b
    dependency: openai
    reason: from 2300, half a day later
    start: 2300-01-01T12:00:00Z
    duration: 1h
    repeat: weekly
`)
	first := f.Windows[0].Start
	weeks := (time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC).Unix() - first.Unix()) / (7 * 24 * 3600)
	occ := time.Unix(first.Unix()+weeks*7*24*3600, 0).UTC()
	if s, e, ok := f.Windows[0].At(occ.Add(30 * time.Minute)); !ok || !s.Equal(occ) || !e.Equal(occ.Add(time.Hour)) {
		t.Errorf("at %s: %s..%s in force %v, want the occurrence %s", occ.Add(30*time.Minute), s, e, ok, occ)
	}
}

// A marker is a claim: apply clears only an override it could have
// written. An item under a dependency name apply never writes, or one
// that never expires (apply always sets the window's end), is someone
// else's lever whatever its managed_by says: shown, never cleared.
func TestAForgedMarkerClearsNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	marker := `{"file":"prod","window":"postgres@2026-12-05T02:00:00Z","sha256":"x"}`
	for _, it := range []store.Item{
		{store.PK: breaker.OverrideKey("Core API"), "state": "forced_open", "reason": "incident", "actor": "oncall",
			"created_at": t0.UnixMilli(), "version": int64(1), "managed_by": marker, store.IndexOverrides.Attr: breaker.OverrideIndexKey,
			store.IndexLists.Attr: breaker.OverrideIndexKey, store.IndexLists.Sort: breaker.OverrideKey("Core API")},
		{store.PK: breaker.OverrideKey("core-api"), "state": "forced_open", "reason": "incident", "actor": "oncall",
			"created_at": t0.UnixMilli(), "version": int64(1), "managed_by": marker, store.IndexOverrides.Attr: breaker.OverrideIndexKey,
			store.IndexLists.Attr: breaker.OverrideIndexKey, store.IndexLists.Sort: breaker.OverrideKey("core-api")},
	} {
		if err := e.st.Put(ctx, it, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	empty := parse(t, "version: 1\ncontext: prod\nwindows: []\n")
	if ds := e.apply(t, empty, nil); kinds(ds) != "Core API:unplanned_override core-api:unplanned_override" {
		t.Errorf("forged markers: %s, want both unplanned (left alone)", kinds(ds))
	}
	for _, dep := range []string{"Core API", "core-api"} {
		if _, err := e.st.Get(ctx, breaker.OverrideKey(dep)); err != nil {
			t.Errorf("apply cleared %s, which it could not have written: %v", dep, err)
		}
	}
}

// A managed_by marker is a claim any writer of breaker# items can make:
// put on an incident override (its item rewritten whole, write_id and
// all), it does not make the override the file's. apply clears only what
// its own record of the write shows it wrote, and leaves the incident
// lever alone.
func TestPlantedMarkerDoesNotMakeAnOverrideManaged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f := parse(t, smallest)
	// The window's override, written by apply: its marker is what a
	// plant copies.
	e.clk.Advance(10 * time.Second)
	e.apply(t, f, nil)
	marker := e.override(t, "postgres").ManagedBy
	// An incident lever on openai, then the marker put on it by hand,
	// with a write_id of the window's write too.
	if _, _, err := levertest.Force(ctx, e.st, e.clk, e.log, levertest.Req{Dependency: "openai", Reason: "INC-7 provider outage", Actor: "oncall",
		For: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, wid := range []string{"", e.override(t, "postgres").WriteID} {
		it := e.override(t, "openai").Raw.Clone()
		it["managed_by"] = marker
		if wid != "" {
			it["write_id"] = wid
		}
		if err := e.st.Put(ctx, it, store.Always()); err != nil {
			t.Fatal(err)
		}
		if ds := e.apply(t, f, nil); strings.Contains(kinds(ds), "openai:window_ended") {
			t.Errorf("a planted marker (write_id %q) made the incident override the file's: %s", wid, kinds(ds))
		}
		if o := e.override(t, "openai"); o == nil || !o.ActiveAt(e.clk.Now()) {
			t.Fatalf("apply cleared the incident override carrying a planted marker (write_id %q)", wid)
		}
	}
}

// countingReader counts the record reads Written makes, by subject.
type countingReader struct {
	rr       levers.RecordReader
	subjects []string
}

func (c *countingReader) List(ctx context.Context, q audit.Query) (audit.Listing, error) {
	c.subjects = append(c.subjects, q.Subject)
	return c.rr.List(ctx, q)
}

// A file reads the records of the overrides whose marker names it, and of
// no other: another file's window in force costs it no read (and so no
// round trip), and is not the file's to clear whatever its records say.
func TestWrittenReadsOnlyTheFilesOwnRecords(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	prod := parse(t, smallest)
	vendor := parse(t, "version: 1\ncontext: prod\nname: vendor\nwindows:\n  - dependency: openai\n    reason: provider maintenance\n    start: 2026-12-05T02:00:00Z\n    duration: 1h\n")
	e.clk.Advance(10 * time.Second)
	e.apply(t, prod, nil)
	e.apply(t, vendor, nil)
	list, _, err := e.ov.ListForWith(ctx, rules.Known, nil)
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{rr: e.log}
	written, err := prod.Written(ctx, cr, list)
	if err != nil {
		t.Fatal(err)
	}
	if len(cr.subjects) != 1 || cr.subjects[0] != breaker.OverrideKey("postgres") {
		t.Errorf("prod read the records of %q, want postgres's alone", cr.subjects)
	}
	if pg := e.override(t, "postgres"); pg == nil || !written[levers.WrittenKey(*pg)] || len(written) != 1 {
		t.Errorf("written %v, want prod's postgres override alone", written)
	}
	if ds := levers.Compare(prod, levers.State{Now: e.clk.Now(), Overrides: list, Written: written}); kinds(ds) != "openai:unplanned_override" {
		t.Errorf("prod's view of vendor's window: %s, want it shown and left alone", kinds(ds))
	}
}
