package list

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// resolveSubject reads --subject. Every subject is KIND#NAME (breaker#openai,
// rl#agent-1, request#…), so a value without a "#" matches no record: a
// dependency name is understood as its override's subject (said in one line
// through note), anything else is refused with what to write instead. A
// name the context does not know, near one it does, is refused with the
// suggestion rather than listed as nothing. A value with a "#", or a
// pattern ending in "*", is taken as it is.
func resolveSubject(subject string, known []string, note func(string)) (string, error) {
	if subject == "" || strings.Contains(subject, "#") || strings.HasSuffix(subject, "*") {
		return subject, nil
	}
	if err := breaker.ValidateDependency(subject); err != nil {
		hint := "give KIND#NAME, like breaker#openai or rl#agent-1 (a trailing * matches a prefix)"
		if s := breaker.ClosestDependency(strings.ToLower(subject), known); s != "" {
			hint = fmt.Sprintf("did you mean %s?", breaker.OverrideKey(s))
		}
		return "", cmdutil.Usagef("--subject %s names no record's subject: %s", textsafe.Quote(subject), hint)
	}
	if len(known) > 0 && !slices.Contains(known, subject) {
		if s := breaker.ClosestDependency(subject, known); s != "" {
			return "", cmdutil.Usagef("--subject %s: this context knows no dependency %s (did you mean %s?); give %s to list its records anyway",
				subject, subject, breaker.OverrideKey(s), breaker.OverrideKey(subject))
		}
	}
	key := breaker.OverrideKey(subject)
	note(fmt.Sprintf("note: --subject %s read as %s (the dependency's breaker override)", subject, key))
	return key, nil
}
