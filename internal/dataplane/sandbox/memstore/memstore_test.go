package memstore_test

import (
	"math"
	"testing"

	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

// canonical must give what the text round trip gives, which the conformance
// suite assumes.
func TestCanonicalMatchesTheTextRoundTrip(t *testing.T) {
	for _, v := range []any{int(7), int64(-3), 0.0, math.Copysign(0, -1), 1.5, -2.25, 3.0, 1e15, 1e100, -1e19, float64(1 << 60), 1<<53 - 1, 1 << 53, 9.223372036854775e18,
		float64(1 << 62), math.Nextafter(1<<63, 0), float64(1 << 63), 0.1 + 0.2, 123456789.123} {
		st := memstore.New()
		if err := st.Put(t.Context(), store.Item{store.PK: "x", "n": v}, store.Always()); err != nil {
			t.Fatal(err)
		}
		got, err := st.Get(t.Context(), "x")
		if err != nil {
			t.Fatal(err)
		}
		s, _ := store.FormatNumber(v)
		want, _ := store.ParseNumber(s)
		if got["n"] != want {
			t.Errorf("%T(%v) stored as %T(%v), the text round trip gives %T(%v)", v, v, got["n"], got["n"], want, want)
		}
	}
}
