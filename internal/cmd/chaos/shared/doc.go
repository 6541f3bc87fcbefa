// Package shared holds what the `koshactl chaos` commands have in common:
// choosing the context's chaos key source (one place decides the order),
// the context's allowed targets, and the --key-file flag.
package shared
