// Package fsnodes makes the kinds of file an operator's path may name that
// are not regular files (a named pipe, a character device, a block device, a
// symbolic link planted over a victim file) in a test's own directory, never
// the machine's /dev. The tests of every
// output and input path (fsutil, drill, sandbox, chaos) share them. Tests
// only.
package fsnodes
