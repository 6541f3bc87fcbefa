// Package depargs is what the breaker commands share of the context: a
// dependency name checked with the context's known names as suggestions,
// and the context's override lever kind.
package depargs

import (
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// KnownOf returns the known dependencies of the context f selects, read
// from the config file alone (no store, no credentials); nil when the
// config cannot be read. It is for suggestions on a name refused before
// the context is resolved.
func KnownOf(f *cmdenv.Factory) []string {
	_, c, err := f.SelectedContext()
	if err != nil {
		return nil
	}
	return c.KnownDependencies()
}

// CheckName checks a dependency name given on the command line: an invalid
// one exits 2 with the nearest name the context knows, if one is near.
func CheckName(f *cmdenv.Factory, name string) error {
	if breaker.ValidateDependency(name) == nil {
		return nil
	}
	return cmdutil.UsageError(breaker.CheckDependencyName(name, KnownOf(f)))
}

// Overrides is the context's override lever kind: what the breaker
// commands read through.
func Overrides(env *cmdenv.Env) (*breaker.Overrides, error) {
	return cmdenv.Kind[*breaker.Overrides](env, breaker.Spec.Name)
}
