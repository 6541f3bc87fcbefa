// Package iamtest evaluates IAM policy documents the way AWS does, for
// tests: the fakes (internal/metrics/cwfake, internal/chaos/keys/smfake)
// and a DynamoDB proxy in front of moto ask an [Enforcer] before they
// serve a request, and answer AccessDenied in the service's own error shape
// when the policy does not allow it.
//
// The evaluator covers what koshactl's policies use and what a test needs
// to tell them apart: Allow and Deny statements (an explicit Deny wins,
// nothing allowed is denied), Action and Resource wildcards (`*`, `?`;
// actions case-insensitive), the condition operators StringEquals,
// StringLike and their ForAllValues: and ForAnyValue: forms, and policy
// variables (${aws:userid}, ${aws:PrincipalArn}: any ${KEY} of the
// request's context), which resolve to the caller's values; a variable the
// request has no value for makes its statement match nothing, as IAM's
// invalid statement. The proxy tells callers apart by the access key they
// sign with ([Enforcer.AddCaller]): each one's requests carry its
// aws:userid, aws:PrincipalArn and aws:PrincipalType. An operator
// it does not know matches nothing, so a policy relying on one fails
// closed. ForAllValues holds when the request has no value for the key,
// as in IAM: that is why a Scan (which names no partition key) is not
// limited by dynamodb:LeadingKeys.
//
// DynamoDB requests are read as AWS authorizes them: the table (or
// table/index/NAME) ARN, and dynamodb:LeadingKeys holding the partition key
// of every item named (GetItem, PutItem, DeleteItem, UpdateItem, every key
// of a BatchGetItem or BatchWriteItem) or the partition key value of a
// Query's key condition. A TransactWriteItems is one request per action,
// each the single-item operation it is (a ConditionCheck is
// dynamodb:ConditionCheckItem) with its own key and
// dynamodb:EnclosingOperation = TransactWriteItems; the call is denied
// when any of them is.
//
// [Grants] reads a policy document back as the needs it grants, and
// [PrefixOf] and [WritePrefixOf] name the item prefix a key is granted on:
// how the tests check a role's policy grants what its commands use.
package iamtest
