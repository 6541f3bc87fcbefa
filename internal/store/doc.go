// Package store defines the item store koshactl keeps its control-plane state
// in, and the contract every backend honors.
//
// The model is DynamoDB's: one table, items keyed by a string partition key
// "pk", attributes that are strings or numbers, and writes guarded by a
// [Condition]. Two backends implement it: internal/store/dynamo (DynamoDB and
// DynamoDB-compatible endpoints) and internal/store/sqlite (the embedded store
// of the local context). internal/store/storetest is the conformance suite both
// must pass, so code written against [Store] behaves the same on either.
//
// # What a backend guarantees
//
//   - Every write is atomic with its condition: two writers racing on one pk
//     with conditions that cannot both hold see exactly one succeed; the other
//     gets [ErrConditionFailed].
//   - Numbers round-trip: an int64 reads back as int64, a float64 with a
//     fractional part reads back as the same float64 (see [Item]).
//   - Nothing expires by itself. The "ttl" attribute is garbage collection
//     (DynamoDB's TTL, the embedded store's sweep) and is never relied on;
//     readers check expiry themselves.
//   - Transactions across items are not part of the interface (the data
//     plane never uses them).
//
// # Errors
//
// Backends wrap their failures so callers can classify them with errors.Is:
// [ErrNotFound], [ErrConditionFailed], [ErrUnavailable], [ErrTableMissing],
// [ErrCredentials], [ErrThrottled].
package store
