package breaker

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/suggest"
)

// ErrUnknownDependency matches an *[UnknownDependencyError].
var ErrUnknownDependency = errors.New("unknown dependency")

// UnknownDependencyError reports a well-formed dependency name that the
// context does not list: a typo like open-ai would otherwise be a silent
// no-op across the fleet. Each surface adds its own way past it (the
// command's --allow-unknown, a drill step's allow_unknown).
type UnknownDependencyError struct {
	Name  string
	Known []string
	// Suggestion is the known name Name is a likely typo of ("" if none).
	Suggestion string
}

// Error reads "unknown dependency "x": this context knows a, b (did you mean "y"?)".
func (e *UnknownDependencyError) Error() string {
	return fmt.Sprintf("unknown dependency %q: this context knows %s%s", e.Name, strings.Join(e.Known, ", "), e.DidYouMean())
}

// Is makes errors.Is(err, ErrUnknownDependency) true.
func (e *UnknownDependencyError) Is(target error) bool { return target == ErrUnknownDependency }

// DidYouMean returns ` (did you mean "y"?)`, or "" without a suggestion.
func (e *UnknownDependencyError) DidYouMean() string {
	if e.Suggestion == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
}

// CheckKnownDependency checks name by [ValidateDependency], then that known
// lists it; if not, the error is an *[UnknownDependencyError] suggesting
// the closest known name by [ClosestDependency].
func CheckKnownDependency(name string, known []string) error {
	if err := ValidateDependency(name); err != nil {
		return err
	}
	if slices.Contains(known, name) {
		return nil
	}
	return &UnknownDependencyError{Name: name, Known: known, Suggestion: ClosestDependency(name, known)}
}

// dependencySeparators are ignored when comparing names for a suggestion.
var dependencySeparators = strings.NewReplacer("-", "", "_", "")

// ClosestDependency returns the known name nearest to name, ignoring case,
// hyphens and underscores, if it is within two edits (the one typo rule for
// dependency names, in commands and drills alike; OpenAI is near openai);
// else "". It suggests, never decides: no caller acts on the name it returns.
func ClosestDependency(name string, known []string) string {
	return suggest.Closest(name, known, 3, func(s string) string { return dependencySeparators.Replace(strings.ToLower(s)) })
}

// CheckDependencyName is [ValidateDependency] with the known name nearest
// to an invalid one appended as `(did you mean "openai"?)`: what a command
// says of a name it was given.
func CheckDependencyName(name string, known []string) error {
	err := ValidateDependency(name)
	if err == nil {
		return nil
	}
	if s := ClosestDependency(name, known); s != "" {
		return fmt.Errorf("%w (did you mean %q?)", err, s)
	}
	return err
}
