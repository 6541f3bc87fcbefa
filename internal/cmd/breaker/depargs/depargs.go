// Package depargs checks the dependency names a breaker command is given:
// breaker.CheckDependencies against the context's known list (or none under
// --allow-unknown), its refusals given exit 2 and the command line's ways
// past an unknown name.
package depargs

import (
	"errors"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// CheckDependencies checks names by breaker.CheckDependencies (against the
// context's known list unless allowUnknown), worded for the command line.
func CheckDependencies(names, known []string, allowUnknown bool) error {
	if allowUnknown {
		known = nil
	}
	return DependencyHint(breaker.CheckDependencies(names, known))
}

// Known is the list a command's named dependencies are checked against: the
// context's, or nil (no rule) under --allow-unknown.
func Known(env *cmdenv.Env, allowUnknown bool) []string {
	if allowUnknown {
		return nil
	}
	return env.Context.KnownDependencies()
}

// DependencyHint gives a refused dependency name (breaker.CheckDependencies'
// errors) exit 2 and, for an unknown one, the command line's ways past it;
// other errors pass through.
func DependencyHint(err error) error {
	var unknown *breaker.UnknownDependencyError
	switch {
	case errors.As(err, &unknown):
		return cmdutil.Usagef("%v; add it with koshactl config set-context --add-dependency, or pass --allow-unknown", err)
	case errors.Is(err, breaker.ErrInvalidDependency), errors.Is(err, breaker.ErrNamedTwice):
		return cmdutil.UsageError(err)
	}
	return err
}

// KnownOf returns the known dependencies of the context f selects, read
// from the config file alone (no store, no credentials); nil when the
// config cannot be read. It is for suggestions on a name refused before
// the context is resolved.
func KnownOf(f *cmdenv.Factory) []string {
	file, err := f.Config()
	if err != nil {
		return nil
	}
	name, _ := f.SelectContext(file)
	c, err := file.Context(name)
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
