// Package lever is the one lever of koshactl: what every kind of lever
// (a breaker override, a rate-limit bucket) shares, and the one service that
// moves any of them.
//
// A [Kind] knows its items: their key prefix, codec and rules, what a change
// does to one (its [Plan], the dry run), the policy's words for it (its
// actions and their resource), the notification's, and how a request keeps
// what it read. The [Service] does the rest, the same way for every kind: one
// batch read of the targets (and of the extra keys a caller's policy needs)
// while the actor resolves, the kind's decision, then one transaction per
// chunk of levers, each write conditional on the item as read and written
// with its audit record ([store.Apply]), and the [Report] of what happened.
//
// A change is a [Change]: {kind, action, targets, reason, params}, the params
// the kind's. Asking the table's policy is not the service's business: a
// decorator (internal/approval's guard) wraps it, reading the policy in the
// service's batch read ([Service.Plan]'s extra keys) and deciding on the
// [Planned] change before it is committed, so no surface threads a gate.
//
// Kinds are looked up in a [Registry] built where the process is wired
// (internal/lever/builtin), so the packages that serve every kind (approval,
// notify, iam, policy, the MCP server) import none of them.
package lever
