package drill

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/suggest"
)

// Problem is one thing wrong with a drill file, at a position in it.
type Problem struct {
	// File is the name the file was parsed under.
	File string `json:"file"`
	// Line and Col are 1-based.
	Line int `json:"line"`
	Col  int `json:"col"`
	// Message says what is wrong and, where it can, how to fix it.
	Message string `json:"message"`
}

// String formats the problem as FILE:LINE:COL: message, the form editors
// and CI log parsers recognize; a problem of the whole file (Line 0: it
// could not be read) as FILE: message.
func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Message)
}

// Unreadable reports whether the problem is that the file could not be
// read at all (it has no position).
func (p Problem) Unreadable() bool { return p.Line == 0 }

// ProblemsError is the error form of a non-empty problem list.
type ProblemsError struct {
	Problems []Problem
}

// Error lists the problems one per line.
func (e *ProblemsError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Col, b.Col)
	})
}

// closest returns the candidate nearest to s by edit distance, ignoring
// case, if it is close enough to be a likely typo.
func closest(s string, candidates []string) string {
	return suggest.Closest(s, candidates, max(3, 1+len(s)/3), strings.ToLower)
}

// DidYouMean returns ` (did you mean "x"?)` or "".
func DidYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}
