// Package verify implements `koshactl chaos verify`: run the data plane's
// checks on a chaos header (syntax, target, kid, signature, expiry, cap) and
// explain each, exiting non-zero when one fails.
package verify
