package policy_test

import "github.com/kosha-platform/koshactl/internal/policy"

// The lever actions these tests ask about, and the schema that names them
// (the built-in kinds': internal/approval tests that it is koshactl's).
const (
	actionForceOpen = "breaker.force-open"
	actionClear     = "breaker.clear"
	actionRollback  = "breaker.rollback"
	actionReset     = "ratelimit.reset"
	actionDrain     = "ratelimit.drain"
	actionLift      = "freeze.lift"
)

var levers = policy.NewSchema(
	policy.Lever{Resource: "Dependency", Doc: "A dependency whose breaker a lever forces or clears.", Actions: []string{actionForceOpen, actionClear, actionRollback}},
	policy.Lever{Resource: "Client", Doc: "A rate-limit client whose bucket a lever resets, drains or sets.",
		Actions: []string{actionReset, actionDrain, "ratelimit.set"}},
	policy.Lever{Resource: "Fleet", Doc: "The fleet: a freeze stops every chaos fault and every planned change on it.", Actions: []string{actionLift}},
)
