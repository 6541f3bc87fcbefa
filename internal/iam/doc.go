// Package iam knows which AWS permissions each koshactl command path and the
// data plane use, and renders least-privilege IAM policies from that one
// table for the four roles an installation needs: reader, operator,
// drill-runner and data-plane.
//
// # The table
//
// [Commands] maps a command path ("breaker force-open") to the [Need]s it
// has: an IAM action and, for DynamoDB item actions, the item key prefix
// it touches. The policy of a role is the union of its command paths'
// needs; DynamoDB item actions are limited with dynamodb:LeadingKeys to
// their prefixes, and the writes of a change (a lever and its record, one
// TransactWriteItems, which AWS authorizes item by item) are granted only
// inside a transaction with dynamodb:EnclosingOperation. The tests of
// internal/cmd/iam run every command path
// against moto and fakes, record the operations the SDK sent, and
// compare them with this table, so it cannot drift from the code.
package iam
