package mcptools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/clientargs"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/mcpserver"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// The proposal tools' arguments.
type (
	forceArgs struct {
		Dependencies []string `json:"dependencies" jsonschema:"the dependencies to force open, as breaker status names them"`
		Reason       string   `json:"reason" jsonschema:"why, for the person who approves it and the audit log (one line, at most 500 characters)"`
		For          string   `json:"for,omitempty" jsonschema:"how long the override lasts once approved, a Go duration like 30m (default 1h, within the context's max-override)"`
		Overwrite    bool     `json:"overwrite,omitempty" jsonschema:"replace an active override (otherwise one is a conflict)"`
	}
	clearArgs struct {
		Dependencies []string `json:"dependencies" jsonschema:"the dependencies whose override to clear"`
		Reason       string   `json:"reason" jsonschema:"why, for the person who approves it and the audit log"`
	}
	bucketArgs struct {
		Clients []string `json:"clients" jsonschema:"the client ids whose rate-limit bucket to change"`
		Reason  string   `json:"reason" jsonschema:"why, for the person who approves it and the audit log"`
	}
	drainArgs struct {
		Clients []string `json:"clients" jsonschema:"the client ids whose rate-limit bucket to drain"`
		Reason  string   `json:"reason" jsonschema:"why, for the person who approves it and the audit log"`
		HoldFor string   `json:"hold_for,omitempty" jsonschema:"keep the clients refused this long, a Go duration like 5m (default: drain to zero)"`
	}
	setArgs struct {
		Clients []string `json:"clients" jsonschema:"the client ids whose rate-limit bucket to set"`
		Reason  string   `json:"reason" jsonschema:"why, for the person who approves it and the audit log"`
		Tokens  float64  `json:"tokens" jsonschema:"the token count to set, from 0 to the capacity"`
	}
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
			summary := fmt.Sprintf("Proposed, not applied: change request %s waits for %d approval(s) by a person until %s; they run: %s",
				r.ID, r.Needed, r.ExpiresAt.Format(time.RFC3339), r.ApproveCommand())
			if r.Impact != nil {
				summary += ". Impact: " + strings.Join(r.Impact.Lines(), "; ") + "."
			}
			return mcpserver.Output{Doc: doc, Summary: summary + frozen}, nil
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

func (p proposer) forceOpen(ctx context.Context, a forceArgs) (mcpserver.Output, error) {
	forDur := breaker.DefaultFor
	if a.For != "" {
		d, err := time.ParseDuration(a.For)
		if err != nil || d <= 0 {
			return mcpserver.Output{}, cmdutil.Usagef("for %q is not a positive duration: give one like 30m or 2h", a.For)
		}
		forDur = d
	}
	c := breaker.ForceOpen(a.Reason, breaker.ForceParams{For: forDur, Overwrite: a.Overwrite}, a.Dependencies...)
	c.Known = p.env.Context.KnownDependencies()
	return p.propose(ctx, c, depargs.CheckDependencies(a.Dependencies, c.Known, false))
}

func (p proposer) clear(ctx context.Context, a clearArgs) (mcpserver.Output, error) {
	c := breaker.Clear(a.Reason, a.Dependencies...)
	return p.propose(ctx, c, depargs.CheckDependencies(a.Dependencies, p.env.Context.KnownDependencies(), false))
}

// buckets proposes one bucket operation on clients.
func (p proposer) buckets(ctx context.Context, op ratelimit.Op, reason string, clients []string, params ratelimit.Params) (mcpserver.Output, error) {
	b, err := clientargs.Buckets(p.env)
	if err != nil {
		return mcpserver.Output{}, err
	}
	return p.propose(ctx, b.Change(op, reason, params, clients...), clientargs.CheckClients(clients))
}

func (p proposer) reset(ctx context.Context, a bucketArgs) (mcpserver.Output, error) {
	return p.buckets(ctx, ratelimit.OpReset, a.Reason, a.Clients, ratelimit.Params{})
}

func (p proposer) drain(ctx context.Context, a drainArgs) (mcpserver.Output, error) {
	var hold time.Duration
	if a.HoldFor != "" {
		d, err := time.ParseDuration(a.HoldFor)
		if err != nil {
			return mcpserver.Output{}, cmdutil.Usagef("hold_for %q is not a duration: give one like 5m", a.HoldFor)
		}
		hold = d
	}
	return p.buckets(ctx, ratelimit.OpDrain, a.Reason, a.Clients, ratelimit.Params{HoldFor: hold})
}

func (p proposer) set(ctx context.Context, a setArgs) (mcpserver.Output, error) {
	return p.buckets(ctx, ratelimit.OpSet, a.Reason, a.Clients, ratelimit.Params{Tokens: a.Tokens})
}
