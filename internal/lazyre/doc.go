// Package lazyre is a regular expression compiled on its first use instead of
// at package initialisation.
//
// A package-level regexp.MustCompile runs in every koshactl process, whatever
// the command: `koshactl version` paid for the drill, sandbox and store
// validators' expressions before printing a line. Declare validators with
// [New]; the expression compiles once, on the first match, and an invalid one
// panics there as MustCompile would (each package's tests call its
// validators).
package lazyre
