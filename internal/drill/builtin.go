package drill

// Builtin returns the table of every kind koshactl ships: a closed set,
// one file per kind. It allocates on each call, so no package-level work
// is done for commands that do not parse drills.
func Builtin() *Registry {
	return &Registry{
		Steps: []StepKind{
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
		Mutating: []string{"breaker.force-open", "breaker.clear", "ratelimit.drain", "ratelimit.reset", "ratelimit.set", "chaos.sign"},
		Conditions: []ConditionKind{
			HTTPConditionKind{},
			BreakerConditionKind{},
			BucketConditionKind{},
			ShellConditionKind{},
			AlarmConditionKind{},
		},
	}
}
