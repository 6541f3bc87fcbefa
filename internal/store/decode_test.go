package store

import (
	"slices"
	"testing"
	"time"
)

// The decoder reads an item as far as it goes and lists, in reading order,
// each attribute that does not follow its contract with what was found
// there: the lines `breaker list`, `freeze status` and `audit list` show.
func TestDecoderListsEveryProblemInOrder(t *testing.T) {
	it := Item{
		PK:           "x#bad",
		"name":       int64(7),
		"created_at": int64(1_700_000_000_000),
		"expires_at": MaxEpochMs + 1,
		"version":    int64(0),
		TTLAttr:      "soon",
		"note":       "kept",
	}
	d := NewDecoder(it)
	d.Problem(PK, "want x#<name>")
	if got := d.Str("name", true); got != "" {
		t.Errorf("Str of a number = %q, want \"\"", got)
	}
	if got := d.Str("note", false); got != "kept" {
		t.Errorf("Str(note) = %q", got)
	}
	if got := d.Str("absent", false); got != "" {
		t.Errorf("Str of an absent optional = %q", got)
	}
	if got := d.Time("created_at", true); !got.Equal(time.UnixMilli(1_700_000_000_000)) || got.Location() != time.UTC {
		t.Errorf("Time(created_at) = %v, want it in UTC", got)
	}
	if got := d.Time("expires_at", false); !got.IsZero() {
		t.Errorf("Time past 9999 = %v, want the zero time", got)
	}
	if got := d.Time("lifted_at", false); !got.IsZero() {
		t.Errorf("Time of an absent optional = %v", got)
	}
	if got := d.Version("version"); got != 0 {
		t.Errorf("Version 0 = %d, want 0 (malformed)", got)
	}
	d.TTL()
	var got []string
	for _, p := range d.Problems {
		if p.PK != "x#bad" {
			t.Errorf("problem %+v names pk %q", p, p.PK)
		}
		got = append(got, p.Attribute+": "+p.Problem)
	}
	want := []string{
		`pk: found S "x#bad", want x#<name>`,
		`name: found N 7, want S`,
		`expires_at: found N 253402300800000, want N, whole epoch milliseconds between 1970 and 9999`,
		`version: found N 0, want N, a whole number from 1`,
		`ttl: found S "soon", want N, epoch seconds`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%q\nwant\n%q", got, want)
	}
	if !HasProblem(d.Problems, "version") || HasProblem(d.Problems, "created_at") {
		t.Errorf("HasProblem: version %v, created_at %v", HasProblem(d.Problems, "version"), HasProblem(d.Problems, "created_at"))
	}
}

// A required attribute that is absent is a problem; an optional one is not.
func TestDecoderRequiredAbsent(t *testing.T) {
	d := NewDecoder(Item{PK: "x#a"})
	d.Str("actor", true)
	d.Time("set_at", true)
	d.Version("version")
	d.Str("ref", false)
	d.Time("expires_at", false)
	d.TTL()
	var got []string
	for _, p := range d.Problems {
		got = append(got, p.Attribute+": "+p.Problem)
	}
	want := []string{
		"actor: found absent, want S",
		"set_at: found absent, want N, whole epoch milliseconds between 1970 and 9999",
		"version: found absent, want N, a whole number from 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%q\nwant\n%q", got, want)
	}
}
