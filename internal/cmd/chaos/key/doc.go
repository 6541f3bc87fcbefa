// Package key wires the `koshactl chaos key` command group: show the ids of
// the context's chaos keys, and rotate its signing key.
package key
