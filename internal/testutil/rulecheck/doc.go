// Package rulecheck checks a written-out name rule (a byte loop that
// replaced a regular expression, so no process compiles one at start-up)
// against the expression it replaced. Tests only.
package rulecheck
