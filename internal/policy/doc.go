// Package policy is the table's shared change policy (docs/contracts/policy.md):
// a Cedar policy set, validated against koshactl's schema ([Schema]), stored
// as one item of the control table ([Key]), and the one decision every surface
// asks of it ([Decide]): may this actor pull this lever on this target within
// these bounds now, only with N approvals from other people, or not at all.
//
// With no policy stored, [Decide] allows everything: koshactl behaves as it
// did before policies existed.
package policy
