// Package wait is how a test waits for a state: a subprocess serving, a
// screen showing a row, a fleet applying an override, a command waiting on
// its fake clock.
//
// A test polls for the state it needs with [Until] (or [For], off the
// test's goroutine or under a context) and goes on as soon as it holds; it
// never sleeps a fixed time, and it waits for a state, never for a message
// text. [Ceiling], the one bound, only ends a run that hangs. It is
// generous on purpose (the suite must pass with every core busy under
// -race), so it is never the time a test expects to take, and a test never
// asserts that something was fast.
package wait
