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

// CheckClients validates every client id and refuses duplicates; the error
// exits 2 and nothing has been read or written.
func CheckClients(ids []string) error {
	seen := map[string]bool{}
	for _, id := range ids {
		if err := ratelimit.ValidateClientID(id); err != nil {
			return cmdutil.UsageError(err)
		}
		if seen[id] {
			return cmdutil.Usagef("client %q is named twice", id)
		}
		seen[id] = true
	}
	return nil
}

// Buckets is the context's bucket lever kind: what the ratelimit commands
// read through (a usage error names a fix for limits it cannot use).
func Buckets(env *cmdenv.Env) (*ratelimit.Buckets, error) {
	return cmdenv.Kind[*ratelimit.Buckets](env, ratelimit.Spec.Name)
}
