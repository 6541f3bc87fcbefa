package breaker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// rawAttr is an attribute as another tool writes it: DynamoDB's type letter
// and the value's text ("N", "9e125").
type rawAttr = storetest.Attr

// malformedCase is one override item that does not follow the contract.
type malformedCase struct {
	name string
	// change replaces (or, with an empty type, removes) attributes of a
	// well-formed item.
	change map[string]rawAttr
	// attr is the attribute reported, found what the report says was there.
	attr, found string
	// active is the contract's reading of the item at t0.
	active bool
}

var malformedCases = []malformedCase{
	{"version missing", map[string]rawAttr{"version": {}}, "version", "found absent", true},
	{"version 1.5", map[string]rawAttr{"version": {Type: "N", Text: "1.5"}}, "version", "found N 1.5", true},
	{"version 9e125", map[string]rawAttr{"version": {Type: "N", Text: "9e125"}}, "version", "found N 9e+125", true},
	{"version of type S", map[string]rawAttr{"version": {Type: "S", Text: "1"}}, "version", `found S "1"`, true},
	// More digits than float64 holds: a condition on the rounded 1 would
	// never match what DynamoDB stores.
	{"version 1.00000000000000000001", map[string]rawAttr{"version": {Type: "N", Text: "1.00000000000000000001"}}, "version", "found N 1.00000000000000000001", true},
	{"version 99999999999999999999", map[string]rawAttr{"version": {Type: "N", Text: "99999999999999999999"}}, "version", "found N 99999999999999999999", true},
	{"version 0", map[string]rawAttr{"version": {Type: "N", Text: "0"}}, "version", "found N 0", true},
	// The operator meant to force the breaker: an unreadable expiry counts
	// as none, so the override holds until cleared.
	{"expires_at of type S", map[string]rawAttr{"expires_at": {Type: "S", Text: "tomorrow"}}, "expires_at", `found S "tomorrow"`, true},
	{"expires_at 1e20", map[string]rawAttr{"expires_at": {Type: "N", Text: "1e20"}}, "expires_at", "found N 1e+20", true},
	{"expires_at negative", map[string]rawAttr{"expires_at": {Type: "N", Text: "-5"}}, "expires_at", "found N -5", true},
	{"expires_at fractional", map[string]rawAttr{"expires_at": {Type: "N", Text: "1795980600000.5"}}, "expires_at", "found N 1.7959806000005e+12", true},
	{"created_at 1e20", map[string]rawAttr{"created_at": {Type: "N", Text: "1e20"}}, "created_at", "found N 1e+20", true},
	{"created_at missing", map[string]rawAttr{"created_at": {}}, "created_at", "found absent", true},
	{"created_at of type S", map[string]rawAttr{"created_at": {Type: "S", Text: "2026-11-29"}}, "created_at", `found S "2026-11-29"`, true},
	{"reason of type N", map[string]rawAttr{"reason": {Type: "N", Text: "42"}}, "reason", "found N 42", true},
	{"actor missing", map[string]rawAttr{"actor": {}}, "actor", "found absent", true},
	{"ttl of type S", map[string]rawAttr{"ttl": {Type: "S", Text: "soon"}}, "ttl", `found S "soon"`, true},
	// Of a type beyond S and N (issue 21): still decoded, flagged, clearable.
	{"version of type BOOL", map[string]rawAttr{"version": {Type: "BOOL", Text: "true"}}, "version", "found BOOL true", true},
	{"version of type M", map[string]rawAttr{"version": {Type: "M", Text: `{"n":{"N":"1"},"by":{"L":[{"S":"x"},{"NULL":true}]}}`}}, "version", "found M (2 attributes)", true},
	{"version of type L", map[string]rawAttr{"version": {Type: "L", Text: `[{"N":"1"},{"M":{"k":{"SS":["a","b"]}}}]`}}, "version", "found L (2 elements)", true},
	{"version of type NS", map[string]rawAttr{"version": {Type: "NS", Text: `["1","2"]`}}, "version", "found NS (2 numbers)", true},
	{"version of type B", map[string]rawAttr{"version": {Type: "B", Text: `"AQ=="`}}, "version", "found B (1 byte)", true},
	{"expires_at of type NULL", map[string]rawAttr{"expires_at": {Type: "NULL", Text: "true"}}, "expires_at", "found NULL", true},
	{"reason of type BS", map[string]rawAttr{"reason": {Type: "BS", Text: `["aGk="]`}}, "reason", "found BS (1 binary value)", true},
	{"actor of type SS", map[string]rawAttr{"actor": {Type: "SS", Text: `["alice","bob"]`}}, "actor", "found SS (2 strings)", true},
	{"state of type BOOL", map[string]rawAttr{"state": {Type: "BOOL", Text: "true"}}, "state", "found BOOL true", false},
	// Nothing says to force: inactive.
	{"state missing", map[string]rawAttr{"state": {}}, "state", "found absent", false},
	{"state of type N", map[string]rawAttr{"state": {Type: "N", Text: "3"}}, "state", "found N 3", false},
	{"state closed", map[string]rawAttr{"state": {Type: "S", Text: "closed"}}, "state", `found S "closed"`, false},
}

// wellFormed is the contract's worked example as raw attributes: forced at
// t0 for 30 minutes.
func wellFormed(tc malformedCase) map[string]rawAttr {
	attrs := map[string]rawAttr{
		"pk": {Type: "S", Text: "breaker#openai"}, "state": {Type: "S", Text: "forced_open"}, "reason": {Type: "S", Text: "provider incident"},
		"actor": {Type: "S", Text: "alice@laptop"}, "created_at": {Type: "N", Text: "1795978800000"}, "expires_at": {Type: "N", Text: "1795980600000"},
		"ttl": {Type: "N", Text: "1795980600"}, "version": {Type: "N", Text: "1"},
	}
	for k, v := range tc.change {
		if v.Type == "" {
			delete(attrs, k)
		} else {
			attrs[k] = v
		}
	}
	return attrs
}

// rawWriter writes an item exactly as given, bypassing koshactl's codec.
type rawWriter func(t *testing.T, attrs map[string]rawAttr)

func TestMalformedOverridesOnEmbeddedStore(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	testMalformedOverrides(t, s, func(t *testing.T, attrs map[string]rawAttr) { storetest.PutRaw(t, s, attrs) })
}

// One table for every case, each case on a dependency of its own: creating
// a table is most of the cost of a case.
func TestMalformedOverridesOnDynamoDB(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	cfg := moto.Config(t, endpoint)
	client := dynamodb.NewFromConfig(cfg)
	s := dynamo.NewFromConfig(cfg, "malformed")
	if _, err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	testMalformedOverrides(t, s, func(t *testing.T, attrs map[string]rawAttr) { storetest.PutRawDynamoDB(t, client, "malformed", attrs) })
}

// testMalformedOverrides runs the cases in parallel on one store, each on a
// dependency of its own (openai-01, openai-02, ...): every check reads that
// dependency's item and audit records.
func testMalformedOverrides(t *testing.T, s store.Store, write rawWriter) {
	for i, tc := range malformedCases {
		dep := fmt.Sprintf("openai-%02d", i+1)
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktest.NewFake(t0.Add(time.Minute))
			ov := newLevers(s, clk)
			log := audit.NewLog(s, clk, "test")
			attrs := wellFormed(tc)
			attrs["pk"] = rawAttr{Type: "S", Text: "breaker#" + dep}
			write(t, attrs)

			// Reported: which attribute, what was found.
			o, err := ov.Get(t.Context(), dep)
			if err != nil {
				t.Fatalf("Get: %v (a malformed item must be readable, to be shown and cleared)", err)
			}
			if !o.HasProblem(tc.attr) {
				t.Fatalf("Problems = %v, want one about %s", o.Problems, tc.attr)
			}
			for _, p := range o.Problems {
				if p.Attribute == tc.attr && (p.PK != "breaker#"+dep || !strings.Contains(p.Problem, tc.found+",")) {
					t.Errorf("problem = %+v, want pk breaker#%s and %q", p, dep, tc.found)
				}
			}
			if len(o.Problems) != 1 {
				t.Errorf("Problems = %v, want only the one about %s", o.Problems, tc.attr)
			}
			if got := o.ActiveAt(clk.Now()); got != tc.active {
				t.Errorf("ActiveAt = %v, want %v", got, tc.active)
			}
			// A malformed time is unknown (zero), never a year like -292275055.
			if (!o.CreatedAt.IsZero() && o.CreatedAt.Year() < 1970) || o.ExpiresAt.Year() > 9999 {
				t.Errorf("times out of range: created %v, expires %v", o.CreatedAt, o.ExpiresAt)
			}
			// The reference data plane applies the same rule.
			f, err := ov.ForcedOpen(t.Context(), dep)
			if err != nil || f.Active != tc.active || f.Malformed == "" {
				t.Errorf("ForcedOpen = %+v, %v; want active %v and the problem named", f, err, tc.active)
			}
			all, err := ov.List(t.Context())
			list := slices.DeleteFunc(all, func(o breaker.Override) bool { return o.Dependency != dep })
			if err != nil || len(list) != 1 || !list[0].HasProblem(tc.attr) {
				t.Errorf("List = %v, %v; want the item, flagged", list, err)
			}

			// force-open --overwrite replaces it in one command.
			res, _, err := ov.WithLog(log).ForceOne(t.Context(), forceReq{Dependency: dep, Reason: "fix",
				Actor: "bob", For: time.Hour, Overwrite: true})
			if err != nil {
				t.Fatalf("force-open --overwrite of a malformed item: %v", err)
			}
			after, err := ov.Get(t.Context(), dep)
			if err != nil || after.Malformed() || after.Reason != "fix" || after.Version != res.After.Version || after.Version < 1 {
				t.Errorf("after replace: %+v, %v", after, err)
			}

			// clear removes it in one command.
			write(t, attrs)
			clr, _, err := ov.WithLog(log).ClearOne(t.Context(), dep, "bob", "cleanup")
			if err != nil || clr.Before == nil {
				t.Fatalf("clear of a malformed item: %+v, %v", clr, err)
			}
			if _, err := s.Get(t.Context(), "breaker#"+dep); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("item still there after clear: %v", err)
			}

			// Both audit records keep the item exactly as it was stored.
			l, err := log.List(t.Context(), audit.Query{Subject: "breaker#" + dep})
			recs := l.Records
			if err != nil || len(recs) != 2 || len(l.Unreadable) != 0 {
				t.Fatalf("audit = %v, %v", l, err)
			}
			want := rawDoc(t, attrs)
			for _, r := range recs {
				var got map[string]any
				if err := json.Unmarshal(r.Before, &got); err != nil {
					t.Fatalf("%s before is not JSON: %v", r.Action, err)
				}
				if !sameDoc(got, want) {
					t.Errorf("%s before = %s, want the stored attributes %v", r.Action, r.Before, want)
				}
			}
		})
	}
}

// rawDoc is the audit before-image of attrs: every attribute but pk, strings
// as JSON strings, numbers as JSON numbers, other types in DynamoDB's JSON
// notation.
func rawDoc(t *testing.T, attrs map[string]rawAttr) map[string]any {
	t.Helper()
	var b strings.Builder
	b.WriteString("{")
	first := true
	for k, v := range attrs {
		if k == "pk" {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteString(":")
		switch v.Type {
		case "S":
			vb, _ := json.Marshal(v.Text)
			b.Write(vb)
		case "N":
			b.WriteString(v.Text)
		default:
			// Beyond S and N: DynamoDB's JSON notation, {"BOOL":true}.
			fmt.Fprintf(&b, "{%q:%s}", v.Type, v.Text)
		}
	}
	b.WriteString("}")
	var doc map[string]any
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("%s: %v", b.String(), err)
	}
	return doc
}

// An override item holding, besides the contract's attributes, one of every
// DynamoDB type (a note of type BOOL, tags of type SS, …) is a well-formed
// override: never hidden, never malformed, and kept exactly in the audit
// before-images of the clear and the replace that remove it. A valid
// override next to it is listed too.
func TestUnknownAttributesOfEveryTypeAreKeptAndIgnored(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		testUnknownAttributes(t, func(t *testing.T) (store.Store, rawWriter) {
			s := openStore(t)
			return s, func(t *testing.T, attrs map[string]rawAttr) { storetest.PutRaw(t, s, attrs) }
		})
	})
	t.Run("dynamodb", func(t *testing.T) {
		endpoint := moto.Start(t)
		cfg := moto.Config(t, endpoint)
		client := dynamodb.NewFromConfig(cfg)
		testUnknownAttributes(t, func(t *testing.T) (store.Store, rawWriter) {
			s := dynamo.NewFromConfig(cfg, "unknown-attrs")
			if _, err := s.Init(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s, func(t *testing.T, attrs map[string]rawAttr) {
				storetest.PutRawDynamoDB(t, client, "unknown-attrs", attrs)
			}
		})
	})
}

func testUnknownAttributes(t *testing.T, open func(t *testing.T) (store.Store, rawWriter)) {
	s, write := open(t)
	clk := clocktest.NewFake(t0.Add(time.Minute))
	ov := newLevers(s, clk)
	log := audit.NewLog(s, clk, "test")
	attrs := wellFormed(malformedCase{})
	for k, v := range storetest.EveryType {
		attrs[k] = v
	}
	write(t, attrs)
	other := wellFormed(malformedCase{})
	other["pk"] = rawAttr{Type: "S", Text: "breaker#core-api"}
	write(t, other)

	o, err := ov.Get(t.Context(), "openai")
	if err != nil || o.Malformed() || !o.ActiveAt(clk.Now()) || o.Reason != "provider incident" {
		t.Fatalf("Get = %+v, %v; want a well-formed active override", o, err)
	}
	for name, list := range map[string]func(context.Context) ([]breaker.Override, error){
		"List": ov.List, "ListForWith": func(ctx context.Context) ([]breaker.Override, error) {
			list, _, err := ov.ListForWith(ctx, []string{"openai", "core-api"}, nil)
			return list, err
		},
	} {
		got, err := list(t.Context())
		if err != nil || len(got) != 2 || got[0].Dependency != "core-api" || got[1].Dependency != "openai" || got[1].Malformed() {
			t.Errorf("%s = %+v, %v; want both overrides, well-formed", name, got, err)
		}
	}
	if _, _, err := ov.WithLog(log).ForceOne(t.Context(), forceReq{Dependency: "openai", Reason: "fix",
		Actor: "bob", For: time.Hour, Overwrite: true}); err != nil {
		t.Fatalf("force-open --overwrite: %v", err)
	}
	write(t, attrs)
	if clr, _, err := ov.WithLog(log).ClearOne(t.Context(), "openai", "bob", "cleanup"); err != nil || clr.Before == nil {
		t.Fatalf("clear: %+v, %v", clr, err)
	}
	l, err := log.List(t.Context(), audit.Query{})
	if err != nil || len(l.Records) != 2 || len(l.Unreadable) != 0 {
		t.Fatalf("audit = %+v, %v", l, err)
	}
	want := rawDoc(t, attrs)
	for _, r := range l.Records {
		var got map[string]any
		if err := json.Unmarshal(r.Before, &got); err != nil {
			t.Fatalf("%s before is not JSON: %v", r.Action, err)
		}
		if !sameDoc(got, want) {
			t.Errorf("%s before = %s, want the stored attributes %v", r.Action, r.Before, want)
		}
	}
}

// sameDoc compares two before-images, the elements of DynamoDB's sets in
// any order (DynamoDB returns them in an order of its own).
func sameDoc(a, b any) bool {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		return reflect.DeepEqual(a, b)
	}
	if len(am) != len(bm) {
		return false
	}
	for k, av := range am {
		bv, ok := bm[k]
		if !ok {
			return false
		}
		if k == "SS" || k == "NS" || k == "BS" {
			as, _ := av.([]any)
			bs, _ := bv.([]any)
			if len(as) != len(bs) {
				return false
			}
			for _, x := range as {
				if !slices.ContainsFunc(bs, func(y any) bool { return reflect.DeepEqual(x, y) }) {
					return false
				}
			}
			continue
		}
		if al, ok := av.([]any); ok {
			bl, ok := bv.([]any)
			if !ok || !slices.EqualFunc(al, bl, sameDoc) {
				return false
			}
			continue
		}
		if !sameDoc(av, bv) {
			return false
		}
	}
	return true
}

// The reference data plane (a ForceWatcher reading *Overrides) applies the
// contract's rule to a malformed item and logs why it holds.
func TestWatcherHoldsAMalformedExpiryAndLogsIt(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	clk := clocktest.NewFake(t0.Add(time.Minute))
	var logged strings.Builder
	logger := slog.New(slog.NewJSONHandler(&logged, nil))
	b, err := circuit.New(circuit.Settings{Name: "openai", Clock: clk, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	w := circuit.NewForceWatcher(b, breaker.NewOverrides(s, clk), circuit.WatcherSettings{})
	it := storetest.RawItem(t, wellFormed(malformedCase{change: map[string]rawAttr{"expires_at": {Type: "S", Text: "tomorrow"}}}))
	if err := s.Put(t.Context(), it, store.Always()); err != nil {
		t.Fatal(err)
	}
	w.Sync(t.Context())
	if b.State() != circuit.ForcedOpen {
		t.Fatalf("state = %s, want forced_open: a malformed expiry counts as none", b.State())
	}
	if !strings.Contains(logged.String(), `"event":"breaker_override_malformed"`) || !strings.Contains(logged.String(), "expires_at") {
		t.Errorf("no malformed event logged:\n%s", logged.String())
	}
	// Still held an hour past the stored (well-formed) item's 30 minutes.
	clk.Advance(time.Hour)
	w.Sync(t.Context())
	if b.State() != circuit.ForcedOpen {
		t.Errorf("state an hour later = %s, want forced_open until cleared", b.State())
	}
}
