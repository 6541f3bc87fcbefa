// Package get implements `koshactl ratelimit get`: one client's bucket, as
// stored and as the data plane reads it now.
package get
