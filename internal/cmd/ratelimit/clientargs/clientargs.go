// Package clientargs checks the client ids a ratelimit command is given
// (each valid, none named twice; exit 2) and picks the scan width of a
// listing for the context.
package clientargs

import (
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// DynamoSegments is the parallel scan width on DynamoDB contexts.
const DynamoSegments = 4

// ScanSegments returns the scan width for the context: n when set, else
// DynamoSegments on DynamoDB and 1 on the local store (SQLite scans serially).
func ScanSegments(env *cmdenv.Env, n int) int {
	switch {
	case n > 0:
		return n
	case env.Context.IsLocal():
		return 1
	}
	return DynamoSegments
}

// CheckClients checks the client ids a command is given
// (ratelimit.CheckClients); the error exits 2 and nothing has been read or
// written.
func CheckClients(ids []string) error {
	return cmdutil.UsageError(ratelimit.CheckClients(ids))
}

// Buckets is the context's bucket lever kind: what the ratelimit commands
// read through (a usage error names a fix for limits it cannot use).
func Buckets(env *cmdenv.Env) (*ratelimit.Buckets, error) {
	return cmdenv.Kind[*ratelimit.Buckets](env, ratelimit.Spec.Name)
}
