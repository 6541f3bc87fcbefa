package breaker

import (
	"fmt"
	"strings"

	"github.com/kosha-platform/koshactl/internal/lever"
)

// ErrNamedTwice reports a dependency named twice in one operation.
var ErrNamedTwice = lever.ErrNamedTwice

// CheckDependencies is the one check of the dependencies an operation
// names: each by [ValidateDependency], none twice (an error wrapping
// [ErrNamedTwice]), and, when known is not nil, each one the context lists
// ([CheckKnownDependency]'s *[UnknownDependencyError]). Names are checked in
// order; the first problem is returned.
func CheckDependencies(names, known []string) error {
	return lever.CheckTargets(names, "dependency", func(n string) error {
		if known == nil {
			return ValidateDependency(n)
		}
		return CheckKnownDependency(n, known)
	})
}

// ErrInvalidKey reports a --key that does not name an override item.
var ErrInvalidKey = fmt.Errorf("not an override key")

// DependencyOfKey returns what follows "breaker#" in an override item's pk,
// valid dependency name or not; an error wrapping [ErrInvalidKey] when pk
// does not name an override item.
func DependencyOfKey(pk string) (string, error) {
	dep, ok := strings.CutPrefix(pk, OverridePrefix)
	if !ok || dep == "" {
		return "", fmt.Errorf("%w: %q: an override's key is %s<dependency>, as breaker list names it", ErrInvalidKey, pk, OverridePrefix)
	}
	return dep, nil
}
