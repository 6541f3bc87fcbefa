package chaos

import (
	"encoding/base64"
	"testing"
)

// TestB64MatchesStdlib checks the allocation-free wrappers (the offsets
// they report, the copy that keeps decoding off the heap) against
// encoding/base64's strict RawURLEncoding for every length the header uses
// and a spread of others.
func TestB64MatchesStdlib(t *testing.T) {
	enc := base64.RawURLEncoding.Strict()
	for n := 1; n <= 40; n++ {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*37 + n*11) //nolint:gosec // G115: wraps on purpose, for a spread of byte values
		}
		s := string(appendB64(nil, src))
		if want := enc.EncodeToString(src); s != want {
			t.Fatalf("encode %d bytes: %s, want %s", n, s, want)
		}
		dst := make([]byte, n)
		if _, ok := decodeB64(dst, s); !ok || string(dst) != string(src) {
			t.Fatalf("decode %s failed", s)
		}
		// Every single-character change must decode exactly as the strict
		// stdlib decoder does.
		for i := range len(s) {
			for _, c := range []byte{'A', 'B', 'z', '-', '_', '+', '/', '=', ' ', 0xff} {
				mut := []byte(s)
				mut[i] = c
				got := make([]byte, n)
				_, ok := decodeB64(got, string(mut))
				want, err := enc.DecodeString(string(mut))
				if ok != (err == nil) || (ok && string(got) != string(want)) {
					t.Fatalf("decode %q: ok=%v, stdlib err=%v", mut, ok, err)
				}
			}
		}
	}
}
