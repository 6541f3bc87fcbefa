// Package awsconf provides the aws.Config koshactl's AWS clients are built
// from, shaped for an interactive CLI.
//
// [Load] differs from the SDK's config.LoadDefaultConfig in four ways:
//
//   - The EC2 instance metadata service (IMDS) is not probed unless the
//     context asks for it with imds: true. On a laptop that probe is what makes
//     the default credential chain hang for seconds before failing.
//   - Credentials are resolved before Load returns, and when none can be found
//     the error (matching store.ErrCredentials) says which sources were tried
//     and how to fix it, instead of surfacing later as an opaque signing
//     failure.
//   - Retries and per-request timeouts are bounded (3 attempts, 10 s per
//     request by default) so a broken endpoint fails in seconds, not minutes.
//   - A DynamoDB-compatible endpoint (DynamoDB Local, LocalStack, moto)
//     can be paired with explicit dummy credentials; they are never invented
//     for real AWS.
package awsconf
