package cmdenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// The domain services of a resolved context. A command asks its Env for
// them instead of wiring them from the store and the clock itself; each is
// built on first use and once per Env (once per command run), on the Env's
// Clock. A setting of the context that makes a service unusable is a usage
// error (exit 2) naming the fix.

// clk is the Env's clock (the real one when a test's Env sets none).
func (e *Env) clk() clock.Clock {
	if e.Clock == nil {
		return clock.Real{}
	}
	return e.Clock
}

// Levers returns the context's lever service, for every kind the context
// has ([Env.Kinds]): its changes are recorded in [Env.Audit], by the
// context's actor. A command moves levers through [Env.Guard]; a drill
// binds its own records.
func (e *Env) Levers() *lever.Service {
	log := e.Audit()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.levers == nil {
		e.levers = lever.NewService(e.Store, e.clk(), e.Kinds).WithLog(log).WithActor(e.Actor)
		if e.Impact != nil {
			e.levers = e.levers.WithImpact(e.Impact)
		}
	}
	return e.levers
}

// MeasureImpactWith makes a the context's [Env.Impact] (a command's
// --metrics-url names another rate source than the context's): every
// lever service the Env hands out from now on tells impact with it.
func (e *Env) MeasureImpactWith(a lever.Assessor) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Impact, e.levers = a, nil
}

// Guard returns [Env.Levers] under the table's policy (approval's guard):
// what every lever command changes levers through; its proposals spend the
// context's budget (mcp.proposals-per-hour).
func (e *Env) Guard() *approval.Guard {
	return e.Approvals().Guard(e.Levers(), e.CallerIdentity, "").WithProposalsPerHour(e.Context.MCP.ProposalsPerHour)
}

// Kind returns the context's lever kind named name as the K it is (a
// kind's own commands read through it: breaker's *breaker.Overrides); a
// setting of the context the kind cannot use is its error (exit 2).
func Kind[K lever.Kind](e *Env, name string) (K, error) {
	var zero K
	if e.Kinds == nil {
		return zero, fmt.Errorf("context %q has no lever kinds wired (a wiring bug)", e.Name)
	}
	k, err := e.Kinds.Kind(name)
	if err != nil {
		return zero, err
	}
	out, ok := k.(K)
	if !ok {
		return zero, fmt.Errorf("lever kind %q is a %T (a wiring bug)", name, k)
	}
	return out, nil
}

// Policies returns the table's shared change policy, validated against
// [Env.PolicySchema].
func (e *Env) Policies() *policy.Policies {
	return policy.NewPolicies(e.Store, e.clk(), e.PolicySchema())
}

// PolicySchema is the schema of the table's policy: the context's lever
// kinds' entities and actions.
func (e *Env) PolicySchema() *policy.Schema {
	var specs []lever.Spec
	if e.Kinds != nil {
		specs = e.Kinds.Specs()
	}
	return approval.PolicySchema(specs)
}

// Approvals returns the table's change requests and reviews, applied
// through the context's [Env.Levers].
func (e *Env) Approvals() *approval.Service {
	return approval.NewService(e.Store, e.clk(), e.Levers(), e.Name)
}

// CallerIdentity is who acts and how koshactl knows: [Env.Identity], or,
// where only Actor is wired (tests), Actor's answer with no source.
func (e *Env) CallerIdentity(ctx context.Context) (audit.Identity, error) {
	if e.Identity != nil {
		return e.Identity(ctx)
	}
	a, err := e.Actor(ctx)
	return audit.Identity{Actor: a}, err
}

// Audit returns the context's audit log ([Env.AuditLog] on the Env's clock).
func (e *Env) Audit() *audit.Log {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.audit == nil {
		e.audit = e.AuditLog(e.clk())
	}
	return e.audit
}

// LimitsSource says whether the limits are the context's own or the defaults.
func (e *Env) LimitsSource() string {
	if e.Context.RateLimit.Capacity != 0 || e.Context.RateLimit.RefillPerSecond != 0 {
		return fmt.Sprintf("context %q", e.Name)
	}
	return "LLD defaults"
}

// KeySource returns the context's chaos key source by [keys.Choose], or the
// one keyFile names (a command's --key-file, "" when not given).
func (e *Env) KeySource(ctx context.Context, keyFile string) (*keys.Chosen, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ks, ok := e.keySources[keyFile]; ok {
		return ks, nil
	}
	cc := e.Context.Chaos
	ks, err := keys.Choose(ctx, keys.Settings{Context: e.Name, FlagKeyFile: keyFile, KeyFile: cc.KeyFile, KeyEnv: cc.KeyEnv,
		SecretID: cc.SecretID, PropagationDelay: e.PropagationDelay(), Local: e.Context.IsLocal(), StateDir: e.StateDir,
		AWSConfig: e.AWSConfig, Clock: e.clk(), Lookup: e.Environ.Lookup})
	if errors.Is(err, keys.ErrNoSource) {
		return nil, cmdutil.UsageError(err)
	}
	if err != nil {
		return nil, err
	}
	if e.keySources == nil {
		e.keySources = map[string]*keys.Chosen{}
	}
	e.keySources[keyFile] = ks
	return ks, nil
}

// PropagationDelay is the context's chaos.propagation-delay, or
// [keys.DefaultPropagationDelay] when it sets none.
func (e *Env) PropagationDelay() time.Duration {
	if d := e.Context.Chaos.PropagationDelay; d != nil {
		return time.Duration(*d)
	}
	return keys.DefaultPropagationDelay
}

// ChaosTargets returns the chaos targets the context allows, or nil when it
// configures none (the library then allows [chaos.DefaultTargets]).
func (e *Env) ChaosTargets() ([]chaos.Target, error) {
	cfg := e.Context.Chaos.Targets
	if len(cfg) == 0 {
		return nil, nil
	}
	out := make([]chaos.Target, 0, len(cfg))
	for _, s := range cfg {
		t, err := chaos.ParseTarget(s)
		if err != nil {
			return nil, cmdutil.UsageError(fmt.Errorf("context %q: chaos targets: %w; fix them with koshactl config set-context %s --chaos-targets a,b",
				e.Name, err, e.Name))
		}
		out = append(out, t)
	}
	return out, nil
}

// AddKeyFileFlag registers --key-file, the chaos key file a command uses
// instead of the context's key source ([Env.KeySource]).
func AddKeyFileFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVar(target, "key-file", "", "chaos key file to use instead of the context's key source (mode 0600, base64 of 32+ random bytes)")
	_ = cmd.MarkFlagFilename("key-file")
}
