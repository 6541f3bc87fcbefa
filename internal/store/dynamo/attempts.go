package dynamo

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/kosha-platform/koshactl/internal/store"
)

// attempts counts the HTTP attempts the SDK makes for one call: the
// middleware runs after the SDK's retry middleware, once per attempt.
type attempts struct{ n atomic.Int32 }

// option installs the counter on one call.
func (a *attempts) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("koshactlCountAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				a.n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), "Retry", middleware.After)
	})
}

// mark sets ConditionError.Retried on err (a classified error) when the
// refusal came on a retry: an earlier attempt went out and its answer never
// came back, so it may have applied the write.
func (a *attempts) mark(err error) error {
	var ce *store.ConditionError
	if a.n.Load() > 1 && errors.As(err, &ce) {
		ce.Retried = true
	}
	return err
}
