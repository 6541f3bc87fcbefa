// Package freeze provides the fleet-wide freeze item, freeze#fleet
// (docs/contracts/freeze.md): its codec, the rule the data plane applies to
// chaos headers while a freeze holds and after it ends, the read the
// control plane makes of it, and the names of the gauge that reports it.
//
// It is a contract package: the reference data plane imports it (the
// sandbox reads the item with its breaker overrides and runs its rule on
// every chaos header), and so does the control plane (`chaos sign` refuses
// while frozen; the freeze lever writes the item). It holds no write path:
// [Freeze.Item], [Freeze.Condition] and [Freeze.NextVersion] are what a
// writer needs to store the item conditionally, with its audit record, in
// one transaction.
//
// # The rule
//
// A freeze holds from its set_at until the first of its expires_at and
// lifted_at (the end); without either it holds until lifted. While it
// holds every chaos header is refused. After it ends, a header issued
// before the end (its iat, or exp minus 15 minutes for a v=1 header
// without one), rounded up to the second, is refused for good: a header
// minted before a freeze is never honoured again, and one minted after the
// lift is. A lifted freeze therefore stays in the table as a record (the
// lift writes lifted_at, it does not delete the item) for at least one
// header lifetime after its end: [RecordRetention].
//
// Safety first: an item whose end cannot be read holds until a readable
// end passes, and a data plane that has not read the item in the last
// [MaxReadAge] refuses every chaos header ([Reading.AdmitChaos]).
package freeze
