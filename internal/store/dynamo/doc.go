// Package dynamo provides the DynamoDB backend of the item store, for AWS
// and for DynamoDB-compatible endpoints (DynamoDB Local, LocalStack,
// moto).
//
// All items live in one table (default [DefaultTable]) keyed by the string
// partition key "pk", with no sort key and on-demand capacity. Reads are
// strongly consistent. Conditions become ConditionExpressions on the write
// itself, so a conditional write is one atomic request; no transactions are
// used. [Store.Init] creates the table and points DynamoDB's TTL at the "ttl"
// attribute where the endpoint supports it; nothing depends on TTL deleting
// anything.
//
// Errors are classified with the store package's sentinels: a failed
// condition is a *store.ConditionError (carrying the current item when the
// endpoint returns it), a missing table store.ErrTableMissing, throttling
// store.ErrThrottled, rejected or missing credentials store.ErrCredentials,
// and an unreachable endpoint or server fault store.ErrUnavailable.
package dynamo
