// Package chaos wires the `koshactl chaos` command group: sign and verify
// X-Kosha-Chaos headers, and show or rotate the signing key. The commands
// are thin over internal/chaos (the header) and internal/chaos/keys (the
// key sources).
package chaos
