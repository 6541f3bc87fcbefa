// Package wait holds the one bound a test puts on waiting for a state: a
// subprocess serving, a screen showing a row, a fleet applying an override.
//
// A test polls for the state it needs and returns as soon as it holds; the
// bound only ends a run that hangs. It is generous on purpose (the suite
// must pass with every core busy under -race), so it is never the time a
// test expects to take, and a test never asserts that something was fast.
package wait
