package awsconf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/human"
)

// debugLogger is the --debug middleware: one line on w per AWS operation,
// after it finished, naming the service and operation, the HTTP status (or
// error code), the latency, the request id and the attempts it took, then
// one line per failed attempt that was retried. It never prints headers,
// bodies or parameters, so credentials, signatures, secret values and
// item contents cannot appear.
type debugLogger struct {
	mu    sync.Mutex // one line at a time from parallel scan segments
	w     io.Writer
	clock clock.Clock
}

// addDebugMiddleware registers the logger on every client built from the
// config's APIOptions.
func (d *debugLogger) addDebugMiddleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("koshactl.debug",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			start := d.clock.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			d.log(ctx, d.clock.Now().Sub(start), md, err)
			return out, md, err
		}), middleware.Before)
}

func (d *debugLogger) log(ctx context.Context, took time.Duration, md middleware.Metadata, err error) {
	service := strings.ToLower(awsmiddleware.GetServiceID(ctx))
	op := awsmiddleware.GetOperationName(ctx)
	attempts, _ := retry.GetAttemptResults(md)
	var b strings.Builder
	for i, a := range attempts.Results {
		if a.Err == nil || !a.Retried {
			continue
		}
		fmt.Fprintf(&b, "debug: aws %s %s attempt %d: %s, retried\n", service, op, i+1, outcome(a.ResponseMetadata, a.Err))
	}
	n := max(len(attempts.Results), 1)
	fmt.Fprintf(&b, "debug: aws %s %s: %s in %s, %s (%s)", service, op, outcome(md, err),
		took.Round(time.Millisecond), human.Count(int64(n), "attempt"), human.Count(int64(n-1), "retry"))
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok && id != "" {
		fmt.Fprintf(&b, ", request id %s", strconv.Quote(id))
	}
	b.WriteByte('\n')
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _ = io.WriteString(d.w, b.String())
}

// outcome is "HTTP 200", "HTTP 400 ConditionalCheckFailedException", or the
// kind of failure when no response came.
func outcome(md middleware.Metadata, err error) string {
	status := ""
	if raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && raw != nil {
		status = "HTTP " + strconv.Itoa(raw.StatusCode)
	}
	var respErr *smithyhttp.ResponseError
	if status == "" && errors.As(err, &respErr) && respErr.Response != nil {
		status = "HTTP " + strconv.Itoa(respErr.HTTPStatusCode())
	}
	var apiErr smithy.APIError
	switch {
	case err == nil && status != "":
		return status
	case err == nil:
		return "ok"
	case errors.As(err, &apiErr) && status != "":
		return status + " " + apiErr.ErrorCode()
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case status != "":
		return status + " (error)"
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		return "no response (connection failed)"
	}
	return "failed before a response"
}
