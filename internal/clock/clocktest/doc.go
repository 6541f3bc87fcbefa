// Package clocktest holds the fake clock tests drive by hand: a
// [clock.Clock] and [clock.Waiter] whose time moves only when the test
// advances it, so a test waits for a state, never for real time.
package clocktest
