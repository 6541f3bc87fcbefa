package kinds

import (
	"github.com/kosha-platform/koshactl/internal/drill"
)

// Builtin returns the table of every kind koshactl ships: a closed set,
// one file per kind. It allocates on each call, so no package-level work
// is done for commands that do not parse drills.
func Builtin() *drill.Registry {
	return &drill.Registry{
		Steps: []drill.StepKind{
			BreakerForceOpenKind{},
			BreakerClearKind{},
			RateLimitDrainKind{},
			RateLimitResetKind{},
			RateLimitSetKind{},
			ChaosSignKind{},
			HTTPStepKind{},
			WaitForKind{},
			AssertKind{},
			SleepKind{},
			ShellStepKind{},
		},
		Conditions: []drill.ConditionKind{
			HTTPConditionKind{},
			BreakerConditionKind{},
			BucketConditionKind{},
			ShellConditionKind{},
			AlarmConditionKind{},
		},
	}
}
