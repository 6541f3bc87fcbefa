package ratelimit

import (
	"fmt"
	"strings"
)

// Variant selects the take algorithm.
type Variant uint8

const (
	// VariantFixed is the default: strictly increasing updated_at, no
	// negative refill, create only when absent, deny on contention, fail open
	// only on store errors.
	VariantFixed Variant = iota
	// VariantLLD is the LLD's pseudocode as written, flaws included. It exists
	// so the benchmark and the tests can measure those flaws.
	VariantLLD
)

// Variants lists every variant, default first.
var Variants = []Variant{VariantFixed, VariantLLD}

// String returns "fixed" or "lld".
func (v Variant) String() string {
	switch v {
	case VariantFixed:
		return "fixed"
	case VariantLLD:
		return "lld"
	}
	return fmt.Sprintf("Variant(%d)", uint8(v))
}

// ParseVariant reads a variant name as [Variant.String] writes it.
func ParseVariant(s string) (Variant, error) {
	for _, v := range Variants {
		if strings.EqualFold(s, v.String()) {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown rate-limit variant %q: use fixed or lld", s)
}
