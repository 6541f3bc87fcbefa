package lever

import "fmt"

// Proposal is how an agent proposes one action of a kind: the proposal
// tool koshactl mcp offers for it, whose arguments are derived from it
// (the targets, the reason, and the action's own params, in that order).
// An action without one ([Action.Propose] nil) is offered to no agent. The
// kind makes the change from the arguments ([Proposer]).
type Proposal struct {
	// Tool is the tool's name ("propose_force_open"), Title its title and
	// About its description: what is proposed, and that nothing changes
	// until a person approves it.
	Tool, Title, About string
	// Targets is the argument that names the targets ("dependencies"), and
	// TargetsAbout what it says.
	Targets, TargetsAbout string
	// Params are the action's own arguments.
	Params []Param
}

// ParamType is the JSON type of an argument.
type ParamType string

// The argument types: a [Proposer] finds a ParamString as a string, a
// ParamNumber as a float64 and a ParamBool as a bool in [Args.Params].
const (
	ParamString ParamType = "string"
	ParamNumber ParamType = "number"
	ParamBool   ParamType = "boolean"
)

// Param is one argument of a proposal.
type Param struct {
	Name  string
	Type  ParamType
	About string
	// Required arguments are refused when missing; others are absent from
	// [Args.Params].
	Required bool
}

// ReasonArg is the argument every proposal takes its reason in.
const ReasonArg = "reason"

// Param returns the proposal's param named name.
func (p Proposal) Param(name string) (Param, bool) {
	for _, q := range p.Params {
		if q.Name == name {
			return q, true
		}
	}
	return Param{}, false
}

// Check refuses a proposal whose arguments could not be told apart (a
// param named as the targets, the reason or another param), or whose types
// are not a [ParamType]: a kind's mistake, caught by every test that lists
// the tools.
func (p Proposal) Check() error {
	seen := map[string]bool{p.Targets: true, ReasonArg: true}
	if p.Tool == "" || p.Targets == "" || p.Targets == ReasonArg {
		return fmt.Errorf("proposal %q: a tool and a targets argument other than %q are required", p.Tool, ReasonArg)
	}
	for _, q := range p.Params {
		if seen[q.Name] || q.Name == "" {
			return fmt.Errorf("proposal %s: argument %q is named twice or empty", p.Tool, q.Name)
		}
		seen[q.Name] = true
		switch q.Type {
		case ParamString, ParamNumber, ParamBool:
		default:
			return fmt.Errorf("proposal %s: argument %s has no type a tool can take (%q)", p.Tool, q.Name, q.Type)
		}
	}
	return nil
}

// Args are an agent's arguments of a proposal, decoded by the surface
// against its [Proposal]: every required one present, each of its type.
type Args struct {
	Targets []string
	Reason  string
	// Params holds the params given, by name: a string, a float64 or a
	// bool as the param's [ParamType] says.
	Params map[string]any
	// Known lists the targets the context knows (nil: no rule), for a
	// kind that refuses a name it does not list ([Change.Known]).
	Known []string
}

// String is the string param name ("" when not given).
func (a Args) String(name string) string {
	s, _ := a.Params[name].(string)
	return s
}

// Number is the number param name (false when not given).
func (a Args) Number(name string) (float64, bool) {
	f, ok := a.Params[name].(float64)
	return f, ok
}

// Bool is the boolean param name (false when not given).
func (a Args) Bool(name string) bool {
	b, _ := a.Params[name].(bool)
	return b
}

// Proposer is a kind whose actions an agent may propose: it makes the
// change an agent's arguments ask for, or refuses them with an error that
// names the argument and the fix (the agent's to fix: a usage error),
// nothing read. The change is then planned, decided and requested as any
// other.
type Proposer interface {
	Proposed(action string, a Args) (Change, error)
}
