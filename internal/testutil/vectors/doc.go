// Package vectors writes and checks the language-neutral contract test
// vectors in docs/contracts/vectors/: JSON files of cases, each with its
// input and the one right answer, generated from the Go implementation by a
// test in the package that holds the rule (breaker, chaos, the limiter, the
// sandbox's EMF writer, impact, metrics).
//
// Every such test calls [Check] with the document it built. Without a flag
// it fails when the checked-in file differs from what the code produces, so
// the vectors and the code cannot drift apart; `make vectors` runs the same
// tests with -update-vectors, which rewrites the files instead.
package vectors
