// Package identity establishes who is acting, for the audit record: the
// caller ARN that STS GetCallerIdentity returns for the credentials in use,
// or, where koshactl talks to a DynamoDB-compatible endpoint that does not
// serve STS, the name the operator's environment asserts ($KOSHACTL_ACTOR,
// else user@host), recorded as unverified.
//
// # Rules
//
//   - On AWS (the store is a DynamoDB table in AWS), the verified caller ARN
//     is mandatory: every STS failure is an error.
//   - On an endpoint context (the store is a DynamoDB-compatible server), STS
//     at that endpoint is asked first; when it cannot be reached or does not
//     serve STS (HTTP 404, unknown operation), the asserted name is used and
//     marked [audit.ActorUnverified]. An STS that answers "denied",
//     "expired" or "throttled" is believed: those stay errors.
//   - The call is bounded: [Resolver.Timeout] caps it, attempts included, so
//     no command waits on an unreachable host.
//
// A local context (the embedded store: no STS, no IAM) has demo identities
// too ([DemoUsers], picked with $KOSHACTL_DEMO_USER): each is shaped as an
// assumed-role session and recorded as [audit.ActorDemo], which counts as
// verified so that four eyes can be tried there. The local context alone
// vouches for it: a demonstration, not a security boundary, and every
// command acting as one says so.
//
// STS failures are classified ([Kind]) into one-line errors that name the
// endpoint and the fix, matching store.ErrUnavailable (unreachable, not
// served), store.ErrThrottled, or store.ErrCredentials (denied, expired).
//
// [Resolver.Resolve] is a plain function of its inputs, safe to run
// concurrently with the command's first store read.
package identity
