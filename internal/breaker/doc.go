// Package breaker is the control plane's side of the fleet-wide circuit
// breaker override: the breaker#<dependency> item of the control table
// (docs/contracts/breaker-override.md), its codec and the data plane's rule
// for reading it, and the operator operations behind `koshactl breaker`.
//
// # The contract
//
// [Override] is one item decoded with every problem kept ([OverrideFromItem]
// never drops an attribute it cannot read; the raw item stays beside the
// parsed values). [Override.ActiveAt] is the data plane's rule: an item is
// active iff its state is forced_open and expires_at is absent or later; a
// malformed expires_at counts as absent (forced until cleared). [Force] is
// that rule's answer as the data plane caches it, for at most [CacheTTL].
// The reference data plane (internal/dataplane/circuit) imports these; this
// package never imports the data plane.
//
// # Operations
//
// [Overrides] reads overrides (one, a listing by index or by scan) and is
// the override lever's kind of [lever.Kind] (kind.go): what a force, a
// clear and a drill's restore do to a dependency's override, decided by
// the rules of this package (names, reason, the context's duration policy,
// no expiry only when confirmed, an active override replaced only when
// seen or overwritten). The lever service (internal/lever) reads, writes
// each override conditional on what was read (absent, or the write_id or
// version exactly as stored) with its audit record in one transaction
// ([store.Apply]), and reports. The use cases every surface asks are
// [ForceOpen], [Clear], [Overrides.ClearAll] and [Restore].
// [ForceParams.SeenVersion] replaces only the override version the caller
// saw. Listing reads the lists index beside the known dependencies by key
// ([Overrides.Each]), and a prefix scan for items written without it.
package breaker
