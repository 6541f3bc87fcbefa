// Package vtterm is a terminal for tests of full-screen views (the
// dashboard): keys go in through a pipe, the output is replayed on a
// terminal emulator, and a test waits for the screen to show a text.
package vtterm
