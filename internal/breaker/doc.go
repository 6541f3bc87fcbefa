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
// [Overrides] reads and writes items: every write is conditional on what
// was read (absent, or the version attribute exactly as stored), and every
// change is audited with the raw before-image ([Overrides.ForceAudited],
// [Overrides.ClearAudited], and [Overrides.ForceAll] / [Overrides.ClearAll]
// for several dependencies, the one path the command, the dashboard and
// drills all take). [ForceRequest.SeenVersion] replaces only the override
// version the caller saw. Listing uses the overrides index and a prefix scan
// for items written without it.
package breaker
