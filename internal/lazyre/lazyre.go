package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is an expression compiled on first use. Its zero value is not
// usable; make one with [New]. It is safe for concurrent use.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// New returns expr, to be compiled (as by regexp.MustCompile) on first use.
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// Compiled returns the compiled expression, compiling it on the first call.
func (r *Regexp) Compiled() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

// MatchString reports whether s contains a match of the expression.
func (r *Regexp) MatchString(s string) bool { return r.Compiled().MatchString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Compiled().FindStringSubmatch(s) }

// String returns the source text of the expression.
func (r *Regexp) String() string { return r.expr }
