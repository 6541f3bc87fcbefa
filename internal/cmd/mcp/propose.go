package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levergate"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/clientargs"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
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

// submit stores c as a request and announces it: the tool's result is the
// CLI's ChangeRequestResult, with the command a person approves it with.
func (p proposer) submit(ctx context.Context, c approval.Change) (mcpserver.Output, error) {
	id, err := p.env.CallerIdentity(ctx)
	if err != nil {
		return mcpserver.Output{}, err
	}
	r, rec, err := p.env.Approvals().Propose(ctx, p.env.Audit(), approval.Proposal{Change: c, Requester: id, Source: audit.SourceMCP})
	if err != nil {
		return mcpserver.Output{}, err
	}
	cmdenv.Notify(ctx, p.env, false, approval.RequestedEvent(r, rec))
	approve := approval.ApproveCommand(r.ID)
	doc := levergate.Result{Kind: "ChangeRequestResult", Context: p.env.Name, Store: p.env.Store.Describe(), RequestID: r.ID, Status: r.Status,
		Change: c.Summary(), SHA256: r.SHA256, Requester: r.Requester, ApprovalsNeeded: r.Needed, Policies: r.Policies,
		ExpiresAt: r.ExpiresAt, ApproveCommand: approve, AuditID: rec.ID}
	return mcpserver.Output{Doc: doc, Summary: fmt.Sprintf("Proposed, not applied: change request %s waits for %d approval(s) by a person until %s; they run: %s",
		r.ID, r.Needed, r.ExpiresAt.Format(time.RFC3339), approve)}, nil
}

func (p proposer) forceOpen(ctx context.Context, a forceArgs) (mcpserver.Output, error) {
	if err := breaker.CheckForceReason(a.Reason); err != nil {
		return mcpserver.Output{}, err
	}
	if len(a.Dependencies) == 0 {
		return mcpserver.Output{}, cmdutil.Usagef("dependencies: name at least one dependency")
	}
	if err := depargs.CheckDependencies(a.Dependencies, p.env.Context.KnownDependencies(), false); err != nil {
		return mcpserver.Output{}, err
	}
	forDur := breaker.DefaultFor
	if a.For != "" {
		d, err := time.ParseDuration(a.For)
		if err != nil || d <= 0 {
			return mcpserver.Output{}, cmdutil.Usagef("for %q is not a positive duration: give one like 30m or 2h", a.For)
		}
		forDur = d
	}
	reqs := make([]breaker.ForceRequest, len(a.Dependencies))
	for i, dep := range a.Dependencies {
		reqs[i] = breaker.ForceRequest{Dependency: dep, Reason: a.Reason, For: forDur, Overwrite: a.Overwrite}
	}
	// The CLI's dry run: the context's duration policy, one batch read, the
	// override rule per dependency (a held override is a conflict without
	// overwrite), nothing written.
	outs, err := p.env.Overrides().ForceAll(ctx, breaker.ForceAll{Requests: reqs, Actor: p.env.Actor, DryRun: true,
		Known: p.env.Context.KnownDependencies()})
	if de := (*breaker.DurationError)(nil); errors.As(err, &de) {
		return mcpserver.Output{}, cmdutil.Usagef("for: %v", err)
	}
	if err != nil {
		return mcpserver.Output{}, err
	}
	befores := map[string]*breaker.Override{}
	for i, o := range outs {
		befores[a.Dependencies[i]] = o.Result.Before
	}
	c, err := approval.ForceChange(a.Reason, forDur, time.Time{}, false, a.Overwrite, a.Dependencies, befores)
	if err != nil {
		return mcpserver.Output{}, err
	}
	return p.submit(ctx, c)
}

func (p proposer) clear(ctx context.Context, a clearArgs) (mcpserver.Output, error) {
	if err := breaker.CheckForceReason(a.Reason); err != nil {
		return mcpserver.Output{}, err
	}
	if len(a.Dependencies) == 0 {
		return mcpserver.Output{}, cmdutil.Usagef("dependencies: name at least one dependency")
	}
	if err := depargs.CheckDependencies(a.Dependencies, p.env.Context.KnownDependencies(), false); err != nil {
		return mcpserver.Output{}, err
	}
	outs, err := p.env.Overrides().ClearAll(ctx, breaker.ClearAll{Dependencies: a.Dependencies, Reason: a.Reason,
		Actor: p.env.Actor, DryRun: true})
	if err != nil {
		return mcpserver.Output{}, err
	}
	befores := map[string]*breaker.Override{}
	for _, o := range outs {
		befores[o.Dependency] = o.Result.Before
	}
	c, err := approval.ClearChange(a.Reason, a.Dependencies, befores)
	if err != nil {
		return mcpserver.Output{}, err
	}
	return p.submit(ctx, c)
}

// buckets proposes one bucket operation on clients.
func (p proposer) buckets(ctx context.Context, reason string, clients []string, change func(client string) ratelimit.Change) (mcpserver.Output, error) {
	if err := breaker.CheckForceReason(reason); err != nil {
		return mcpserver.Output{}, err
	}
	if len(clients) == 0 {
		return mcpserver.Output{}, cmdutil.Usagef("clients: name at least one client id")
	}
	if err := clientargs.CheckClients(clients); err != nil {
		return mcpserver.Output{}, err
	}
	b, err := p.env.Buckets()
	if err != nil {
		return mcpserver.Output{}, err
	}
	changes := make([]ratelimit.Change, len(clients))
	for i, c := range clients {
		changes[i] = change(c)
		if err := changes[i].Validate(b.Limits()); err != nil {
			return mcpserver.Output{}, cmdutil.UsageError(err)
		}
	}
	outs, err := b.ApplyAll(ctx, ratelimit.ApplyAll{Changes: changes, Reason: reason, Actor: p.env.Actor, DryRun: true})
	if err != nil {
		return mcpserver.Output{}, err
	}
	plans := make([]ratelimit.ChangeResult, len(outs))
	for i, o := range outs {
		plans[i] = o.Result
	}
	c, err := approval.BucketChange(reason, b.Limits(), plans)
	if err != nil {
		return mcpserver.Output{}, err
	}
	return p.submit(ctx, c)
}

func (p proposer) reset(ctx context.Context, a bucketArgs) (mcpserver.Output, error) {
	return p.buckets(ctx, a.Reason, a.Clients, func(c string) ratelimit.Change { return ratelimit.Change{Op: ratelimit.OpReset, Client: c} })
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
	return p.buckets(ctx, a.Reason, a.Clients, func(c string) ratelimit.Change {
		return ratelimit.Change{Op: ratelimit.OpDrain, Client: c, HoldFor: hold}
	})
}

func (p proposer) set(ctx context.Context, a setArgs) (mcpserver.Output, error) {
	return p.buckets(ctx, a.Reason, a.Clients, func(c string) ratelimit.Change {
		return ratelimit.Change{Op: ratelimit.OpSet, Client: c, Tokens: a.Tokens}
	})
}
