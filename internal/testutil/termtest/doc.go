// Package termtest checks, byte by byte, that output meant for a terminal
// holds nothing a terminal would act on. It has no koshactl imports, so any
// package's tests can use it.
package termtest
