package dynamo

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// attempts counts the HTTP attempts the SDK makes for one call: the
// middleware runs after the SDK's retry middleware, once per attempt. sent
// counts those that may have reached the server: all but the ones whose
// connection was never made (a dial error: refused, no route, no such
// host), which sent nothing.
type attempts struct{ n, sent atomic.Int32 }

// option installs the counter on one call.
func (a *attempts) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("koshactlCountAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				a.n.Add(1)
				out, md, err := next.HandleFinalize(ctx, in)
				var oe *net.OpError
				if !errors.As(err, &oe) || oe.Op != "dial" {
					a.sent.Add(1)
				}
				return out, md, err
			}), "Retry", middleware.After)
	})
}
