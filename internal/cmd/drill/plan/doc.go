// Package plan implements `koshactl drill plan`: what a drill would do,
// without doing it.
package plan
