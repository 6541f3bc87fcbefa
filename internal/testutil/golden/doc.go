// Package golden compares a test's output with a file under testdata that
// records it, and rewrites the file when the test runs with -update.
package golden
