package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/mcpserver"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// proposer makes change requests in one context, as the agent's
// identity, audited with source mcp.
type proposer struct {
	f   *cmdenv.Factory
	env *cmdenv.Env
}

// propose makes c a change request (the lever's use case, planned as a dry
// run and requested through the context's guard) and announces it: the
// tool's result is the CLI's ChangeRequestResult, with the command a
// person approves it with. A change the lever's rules refuse is the
// agent's to fix (usage).
func (p proposer) propose(ctx context.Context, c lever.Change, err error) (mcpserver.Output, error) {
	if err == nil {
		var rep lever.Report
		if rep, err = p.env.Guard().Propose(ctx, c); err == nil {
			cmdenv.Announce(ctx, p.env, rep.Event)
			r := *rep.Pending
			doc, frozen := p.frozen(ctx)
			doc.PendingResult = levercmd.Pending(p.env, r)
			return mcpserver.Output{Doc: doc, Summary: proposedSummary(r) + frozen}, nil
		}
	}
	if re := (*lever.RefusedError)(nil); errors.As(err, &re) {
		err = exitcode.Default(exitcode.Usage, err)
	}
	return mcpserver.Output{}, err
}

// proposal is a proposal's result: the change request, and the fleet's
// freeze while it holds (the incident's people may still approve a lever;
// no drill or planned window runs meanwhile).
type proposal struct {
	levercmd.PendingResult
	// FleetFrozen is the freeze holding when the proposal was made (null:
	// not frozen); FreezeError says it could not be read.
	FleetFrozen *freeze.View `json:"fleet_frozen"`
	FreezeError string       `json:"freeze_error,omitempty"`
}

// frozen reads the fleet's freeze for a proposal's result: the document's
// part, and a sentence for its summary ("" when not frozen).
func (p proposer) frozen(ctx context.Context) (proposal, string) {
	fr, err := freeze.Read(ctx, p.env.Store)
	now := p.f.Clock.Now()
	switch {
	case err != nil:
		return proposal{FreezeError: err.Error()}, " Whether the fleet is frozen is unknown: its freeze could not be read."
	case fr == nil || !fr.FrozenAt(now):
		return proposal{}, ""
	}
	v := fr.View(now)
	return proposal{FleetFrozen: &v}, " Note: " + v.Summary + "; no chaos fault, drill or planned window runs until it ends."
}

// reasonAbout is what every proposal's reason argument says.
const reasonAbout = "why, for the person who approves it and the audit log (one line, at most 500 characters)"

// proposalTools are the proposal tools of kinds: one per action a kind
// offers an agent ([lever.Action.Propose]), its arguments derived from the
// action's proposal, in the kinds' order.
func (p proposer) proposalTools(kinds []lever.Spec) []mcpserver.Tool {
	var tools []mcpserver.Tool
	for _, spec := range kinds {
		for _, a := range spec.Actions {
			pr := a.Propose
			if pr == nil || a.Internal {
				continue
			}
			if err := pr.Check(); err != nil {
				panic(err) // a kind's mistake, caught by every test that lists the tools
			}
			kind, action := spec.Name, a.Name
			tools = append(tools, mcpserver.NewSchema(pr.Tool, pr.Title, pr.About, false, schemaOf(*pr),
				func(ctx context.Context, raw json.RawMessage) (mcpserver.Output, error) {
					args, err := argsOf(*pr, raw)
					if err != nil {
						return mcpserver.Output{}, mcpserver.ArgumentsError(pr.Tool, err)
					}
					return p.proposeArgs(ctx, kind, action, args)
				}))
		}
	}
	return tools
}

// schemaOf is a proposal's input schema: the targets (an array of strings)
// and the reason, required, then the action's params; nothing else.
func schemaOf(pr lever.Proposal) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		pr.Targets:      {Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: pr.TargetsAbout},
		lever.ReasonArg: {Type: "string", Description: reasonAbout},
	}, Required: []string{pr.Targets, lever.ReasonArg}, PropertyOrder: []string{pr.Targets, lever.ReasonArg},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, q := range pr.Params {
		s.Properties[q.Name] = &jsonschema.Schema{Type: string(q.Type), Description: q.About}
		s.PropertyOrder = append(s.PropertyOrder, q.Name)
		if q.Required {
			s.Required = append(s.Required, q.Name)
		}
	}
	return s
}

// argsOf decodes an agent's arguments of pr strictly: an object of the
// arguments pr names, each of its type, the required ones present.
func argsOf(pr lever.Proposal, raw json.RawMessage) (lever.Args, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return lever.Args{}, errors.New("want a JSON object")
	}
	a := lever.Args{Params: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		v := m[name]
		var err error
		switch name {
		case pr.Targets:
			if err = json.Unmarshal(v, &a.Targets); err != nil {
				err = fmt.Errorf("%s: want an array of strings", name)
			}
		case lever.ReasonArg:
			if err = json.Unmarshal(v, &a.Reason); err != nil {
				err = fmt.Errorf("%s: want a string", name)
			}
		default:
			q, ok := pr.Param(name)
			if !ok {
				return lever.Args{}, fmt.Errorf("unknown argument %s", textsafe.Quote(textsafe.Truncate(name, 64)))
			}
			var val any
			if err = json.Unmarshal(v, &val); err != nil || !ofType(val, q.Type) {
				err = fmt.Errorf("%s: want a %s", name, q.Type)
			}
			a.Params[name] = val
		}
		if err != nil {
			return lever.Args{}, err
		}
	}
	for _, name := range schemaOf(pr).Required {
		if _, ok := m[name]; !ok {
			return lever.Args{}, fmt.Errorf("%s is required", name)
		}
	}
	return a, nil
}

// ofType is whether v, as encoding/json decodes into an any, is of type t.
func ofType(v any, t lever.ParamType) bool {
	switch v.(type) {
	case string:
		return t == lever.ParamString
	case float64:
		return t == lever.ParamNumber
	case bool:
		return t == lever.ParamBool
	}
	return false
}

// proposeArgs proposes the change of kind's action an agent's arguments
// ask for: the kind makes it ([lever.Proposer]), checked against the
// context's known targets; a refusal is the agent's to fix (usage).
func (p proposer) proposeArgs(ctx context.Context, kind, action string, a lever.Args) (mcpserver.Output, error) {
	k, err := p.env.Kinds.Kind(kind)
	if err != nil {
		return mcpserver.Output{}, err
	}
	pk, ok := k.(lever.Proposer)
	if !ok {
		return mcpserver.Output{}, fmt.Errorf("the %s lever kind offers %s to agents and cannot make it (a bug)", kind, action)
	}
	a.Known = p.env.Context.KnownDependencies()
	c, err := pk.Proposed(action, a)
	return p.propose(ctx, c, exitcode.Default(exitcode.Usage, err))
}

// proposedSummary is a proposal's text result: the request made, or the
// requester's identical one it was coalesced into, with its impact.
func proposedSummary(r lever.Pending) string {
	s := fmt.Sprintf("Proposed, not applied: change request %s waits for %d approval(s) by a person until %s; they run: %s",
		r.ID, r.Needed, r.ExpiresAt.Format(time.RFC3339), r.ApproveCommand())
	if r.Coalesced {
		s = fmt.Sprintf("Coalesced, nothing new stored or announced: your identical proposal is change request %s, still waiting for %d approval(s) by a person until %s; they run: %s",
			r.ID, r.Needed, r.ExpiresAt.Format(time.RFC3339), r.ApproveCommand())
	}
	if r.Impact != nil {
		s += ". Impact: " + strings.Join(r.Impact.Lines(), "; ") + "."
	}
	return s
}
