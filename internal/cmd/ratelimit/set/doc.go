// Package set implements `koshactl ratelimit set`: give a client's bucket an
// exact token count.
package set
