package sqlite

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

// FuzzDecode feeds arbitrary attrs text to the decoder every read runs on
// the database file's rows. The file is the operator's and can be edited or
// damaged by hand, so decode must never panic. Whatever it accepts must carry
// the row's pk, encode, and decode again to an equal item; encoding that
// item once more gives the same text, so a rewrite settles at once.
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 20s ./internal/store/sqlite
func FuzzDecode(f *testing.F) {
	for _, seed := range []struct{ pk, attrs string }{
		{"breaker#openai", `{"state":{"S":"forced_open"},"reason":{"S":"INC-42"},"expires_at":{"N":"1795980600000"},"ttl":{"N":"1795980600"},"version":{"N":"1"}}`},
		{"rl#client-1", `{"tokens":{"N":"19.5"},"updated_at":{"N":"1795978800000"}}`},
		{"x", `{}`},
		{"x", `{"a":{"S":""}}`},
		{"x", `{"a":{"N":"16.0"}}`},
		{"x", `{"a":{"N":"NaN"}}`},
		{"x", `{"a":{"N":"1e400"}}`},
		{"x", `{"a":{"N":"x"}}`},
		{"x", `{"a":{}}`},
		{"x", `{"a":{"S":"s","N":"1"}}`},
		{"x", `{"pk":{"S":"other"}}`},
		{"x", `{"a":{"S":"\ud800"}}`},
		{"x", `{"a":{"S":"q\"u\\o\/t\be\f\n\r\t\u00e9\u2028<\u003c>"}}`},
		{"x", `{"before":{"S":"{\"state\":\"forced_open\",\"version\":3}"},"n":{"N":"-0.5"},"z":{"N":"0"}}`},
		{"x", `{"a":{"S":"x"},"a":{"S":"y"}}`},
		{"x", `{"a": {"S":"x"}}`},
		{"x", `{"a":{"N":"1"},}`},
		{"x", `{"b":{"B":"AAEC/w=="},"t":{"BOOL":true},"z":{"NULL":true},"ss":{"SS":["a","b"]},"ns":{"NS":["1","2.5"]},"bs":{"BS":["aGk="]}}`},
		{"x", `{"l":{"L":[{"S":"a"},{"N":"1"},{"L":[]},{"M":{"k":{"NULL":true}}}]},"m":{"M":{"n":{"N":"-3"},"e":{"M":{}}}}}`},
		{"x", `{"a":{"NULL":false}}`},
		{"x", `{"a":{"BOOL":null}}`},
		{"x", `{"a":{"B":"not base64!"}}`},
		{"x", `{"a":{"NS":["0x10"]}}`},
		{"x", `{"a":{"SS":[]}}`},
		{"x", `{"a":{"L":[{"X":1}]}}`},
		{"x", `{"a":{"L":[[]]}}`},
		{"x", `{"a":{"M":{"k":{"N":"NaN"}}}}`},
		{"x", `[]`},
		{"x", `null`},
		{"x", ``},
	} {
		f.Add(seed.pk, seed.attrs)
	}
	f.Fuzz(func(t *testing.T, pk, attrs string) {
		// The fast way reads what it reads as the general way does.
		if fast, ok := decodeFast(pk, attrs); ok {
			slow, err := decodeGeneral(pk, attrs)
			if err != nil || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("decodeFast(%q, %q) = %v; the general way: %v, %v", pk, attrs, fast, slow, err)
			}
		}
		it, err := decode(pk, attrs)
		if err != nil {
			return
		}
		if it.PK() != pk {
			t.Fatalf("decode(%q, %q) has pk %q", pk, attrs, it.PK())
		}
		text, err := encode(it)
		if err != nil {
			t.Fatalf("decode(%q, %q) = %v, which does not encode: %v", pk, attrs, it, err)
		}
		back, err := decode(pk, text)
		if err != nil {
			t.Fatalf("decode(%q, %q) = %v, encoded as %q, which does not decode: %v", pk, attrs, it, text, err)
		}
		if !sameItem(it, back) {
			t.Fatalf("decode(%q, %q) = %v, encoded as %q, decoded as %v", pk, attrs, it, text, back)
		}
		if again, err := encode(back); err != nil || again != text {
			t.Fatalf("encoding is not stable: %q then %q, %v", text, again, err)
		}
	})
}

// FuzzPutGet writes items built from arbitrary values to a real database
// file and reads them back. Put must refuse an item Validate refuses, with
// store.ErrInvalidItem and nothing written; any other item must come back
// from Get with the same attributes and equal values.
//
//	go test -run '^$' -fuzz '^FuzzPutGet$' -fuzztime 20s ./internal/store/sqlite
func FuzzPutGet(f *testing.F) {
	f.Add("breaker#openai", "reason", "INC-42 core-api brownout", int64(1795980600000), 0.5)
	f.Add("rl#client-1", "tokens", "", int64(-1), 19.999)
	f.Add("x", "ttl", "s", int64(math.MaxInt64), 1e125)
	f.Add("x", "a", "\xff", int64(math.MinInt64), 1e-131)
	f.Add("", "a", "b", int64(0), math.Inf(1))
	f.Add("x", "", "b", int64(0), math.NaN())
	f.Add("x", "pk", "b", int64(3), 3.0)
	s, err := Open(context.Background(), filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := s.Close(); err != nil {
			f.Error(err)
		}
	})
	f.Fuzz(func(t *testing.T, pk, name, str string, i int64, x float64) {
		ctx := context.Background()
		it := store.Item{store.PK: pk, name: str, name + "_int": i, name + "_float": x}
		pk = it.PK() // name may be "pk"
		if err := s.Delete(ctx, pk, store.Always()); err != nil && pk != "" {
			t.Fatalf("delete %q before the round: %v", pk, err)
		}
		err := s.Put(ctx, it, store.Always())
		if verr := it.Validate(); verr != nil {
			if !errors.Is(err, store.ErrInvalidItem) {
				t.Fatalf("Put of an item Validate refuses (%v): %v, want store.ErrInvalidItem", verr, err)
			}
			if _, err := s.Get(ctx, pk); pk != "" && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a refused Put wrote %q: %v", pk, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Put(%v): %v", it, err)
		}
		got, err := s.Get(ctx, pk)
		if err != nil {
			t.Fatalf("Get(%q) after Put: %v", pk, err)
		}
		if !sameItem(store.Normalize(it), got) {
			t.Fatalf("Put %v, Get returned %v", it, got)
		}
	})
}

// sameItem reports whether two items have the same attribute names and
// values equal under the store's rules (NaN equal to itself: the decoder
// reads "NaN", though Validate never lets one be written).
func sameItem(a, b store.Item) bool {
	if !slices.Equal(a.Keys(), b.Keys()) {
		return false
	}
	for k, v := range a {
		af, aNum := store.Item{"x": v}.Float("x")
		bf, bNum := store.Item{"x": b[k]}.Float("x")
		if aNum && bNum && math.IsNaN(af) && math.IsNaN(bf) {
			continue
		}
		if !store.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
