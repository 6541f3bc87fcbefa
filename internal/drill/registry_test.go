package drill

import (
	"strings"
	"testing"
)

type namedStep struct {
	StepKind
	name string
}

func (k namedStep) Name() string { return k.name }

type namedCondition struct {
	ConditionKind
	name string
}

func (k namedCondition) Name() string { return k.name }

// Registry.Check refuses each way a kind table can be unusable, and
// accepts one that is not.
func TestRegistryCheck(t *testing.T) {
	ok := &Registry{Steps: []StepKind{namedStep{name: "a"}, namedStep{name: "b"}},
		Conditions: []ConditionKind{namedCondition{name: "a"}}}
	if err := ok.Check(); err != nil {
		t.Fatalf("a usable table: %v", err)
	}
	for _, tc := range []struct {
		reg  *Registry
		want string
	}{
		{&Registry{Steps: []StepKind{namedStep{name: ""}}}, `step kind ""`},
		{&Registry{Steps: []StepKind{namedStep{name: "a"}, namedStep{name: "a"}}}, `step kind "a"`},
		{&Registry{Steps: []StepKind{namedStep{name: "rollback"}}}, `step kind "rollback"`},
		{&Registry{Conditions: []ConditionKind{namedCondition{name: "within"}}}, `condition kind "within"`},
		{&Registry{Conditions: []ConditionKind{namedCondition{name: "c"}, namedCondition{name: "c"}}}, `condition kind "c"`},
	} {
		if err := tc.reg.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check() = %v, want an error about %s", err, tc.want)
		}
	}
}
