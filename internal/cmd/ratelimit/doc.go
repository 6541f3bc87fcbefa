// Package ratelimit wires the `koshactl ratelimit` command group.
package ratelimit
