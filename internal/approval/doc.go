// Package approval holds change requests and break-glass reviews: the items
// a change the table's policy (internal/policy) does not allow at once
// becomes, and the one way such a change is applied (docs/contracts/policy.md).
//
// A request (request#<id>) holds the exact change in a canonical form and its
// SHA-256, the requester, its status and an expiry. [Service.Approve] applies
// exactly that change, in one transaction with its audit record and the
// request's new status, conditional on the request as read (pending, the same
// hash) and on every lever as it was when the change was requested: two
// approvers racing apply it once, and a lever someone changed since is a
// conflict, never overwritten unseen. Requests are immutable but for their
// status: any edit is a new request.
//
// A break-glass change is applied at once where the policy allows it, with a
// review (review#<id>) in the same transaction; the review stays open until
// someone other than the actor acknowledges it ([Service.Ack]).
package approval
