// Package syncbuf provides Buffer, a bytes.Buffer that one goroutine may
// write while another reads: for tests that capture the output of a command
// or server still running.
package syncbuf
