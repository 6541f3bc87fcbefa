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
// [Overrides] is the lever service: built once per context with its audit
// log, the context's duration policy and its announcer bound in
// ([Overrides.WithLog], [Overrides.WithDurations], [Overrides.WithAnnounce]),
// it is the one path the commands, the dashboard, approvals, the MCP server
// and drills take to force ([Overrides.ForceAll]), clear
// ([Overrides.ClearAll]), restore ([Overrides.Restore]) and reconcile
// ([Overrides.Reconcile]). It enforces every rule of a change, writes every
// override conditional on what was read (absent, or the version attribute
// exactly as stored) together with its audit record in one transaction
// ([store.Apply]), and announces what it wrote after the commit.
// [ForceRequest.SeenVersion] replaces only the override version the caller
// saw. Listing reads the lists index beside the known dependencies by key
// ([Overrides.Each]), and a prefix scan for items written without it.
package breaker
