// Package list implements `koshactl ratelimit list`: every client's bucket,
// or only the clients being limited now.
package list
