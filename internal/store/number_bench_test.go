package store_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

// BenchmarkParseNumber measures reading stored numbers: an integer, a short
// decimal (the common case, never checked for exactness), a 17-digit float
// (checked, kept as float64) and a 21-digit number (kept as store.Number).
//
//	go test -run '^$' -bench ParseNumber -benchmem ./internal/store
func BenchmarkParseNumber(b *testing.B) {
	for _, s := range []string{"1795978800000", "19.5", "13.337000000000001", "1.00000000000000000001"} {
		b.Run(s, func(b *testing.B) {
			for b.Loop() {
				if _, err := store.ParseNumber(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
