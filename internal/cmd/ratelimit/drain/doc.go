// Package drain implements `koshactl ratelimit drain`: empty a client's
// bucket so its requests are refused (429), for drills.
package drain
