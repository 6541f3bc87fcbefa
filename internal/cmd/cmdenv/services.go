package cmdenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
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

// Overrides returns the context's breaker lever service: its changes are
// recorded in [Env.Audit], held to the context's max-override, and their
// notifications queued until [Env.Announce] sends them (after the command
// has printed what it did).
func (e *Env) Overrides() *breaker.Overrides {
	log := e.Audit()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.overrides == nil {
		e.overrides = breaker.NewOverrides(e.Store, e.clk()).WithLog(log).WithDurations(e.Context.OverridePolicy()).
			WithAnnounce(func(_ context.Context, a breaker.Announcement) { e.queue(notify.BreakerEvent(a)) })
	}
	return e.overrides
}

// queue keeps ev for [Env.Announce].
func (e *Env) queue(ev notify.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.announcements = append(e.announcements, ev)
}

// Announce sends the notifications of the changes the Env's services made
// and have not announced yet, each once, in order (bounded by the
// notifier; a failure is reported, never the command's).
func (e *Env) Announce(ctx context.Context) {
	e.mu.Lock()
	evs := e.announcements
	e.announcements = nil
	e.mu.Unlock()
	for _, ev := range evs {
		if e.Notifier != nil {
			e.Notifier.Notify(ctx, ev)
		}
	}
}

// Policies returns the table's shared change policy.
func (e *Env) Policies() *policy.Policies { return policy.NewPolicies(e.Store, e.clk()) }

// Approvals returns the table's change requests and reviews, applied
// through the context's [Env.Overrides] and [Env.Buckets] (when its limits
// are usable; else a bucket request is refused when approved).
func (e *Env) Approvals() *approval.Service {
	s := approval.NewService(e.Store, e.clk(), e.Overrides(), e.Name)
	if b, err := e.Buckets(); err == nil {
		s.WithBuckets(b)
	}
	return s
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

// Limits returns the context's bucket limits (the LLD's defaults unless the
// context sets its own). They must match what the data plane runs with.
func (e *Env) Limits() (ratelimit.Limits, error) {
	l, err := ratelimit.NewLimits(e.Context.RateLimit.Capacity, e.Context.RateLimit.RefillPerSecond)
	if err != nil {
		return l, cmdutil.UsageError(fmt.Errorf("context %q: %w; fix it with koshactl config set-context %s --ratelimit-capacity N --ratelimit-refill R",
			e.Name, err, e.Name))
	}
	return l, nil
}

// LimitsSource says whether the limits are the context's own or the defaults.
func (e *Env) LimitsSource() string {
	if e.Context.RateLimit.Capacity != 0 || e.Context.RateLimit.RefillPerSecond != 0 {
		return fmt.Sprintf("context %q", e.Name)
	}
	return "LLD defaults"
}

// Buckets returns the context's rate-limit lever service, under its
// [Env.Limits]: its changes are recorded in [Env.Audit] and their
// notifications queued until [Env.Announce] sends them.
func (e *Env) Buckets() (*ratelimit.Buckets, error) {
	l, err := e.Limits()
	if err != nil {
		return nil, err
	}
	log := e.Audit()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.buckets == nil {
		b, err := ratelimit.NewBuckets(e.Store, e.clk(), l)
		if err != nil {
			return nil, cmdutil.UsageError(fmt.Errorf("context %q: %w", e.Name, err))
		}
		e.buckets = b.WithLog(log).WithAnnounce(func(_ context.Context, a ratelimit.Announcement) { e.queue(notify.BucketEvent(a)) })
	}
	return e.buckets, nil
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

// GaugeConfig is what the context's gauge source is chosen and opened from;
// prometheusURL, when set, overrides the context's source (a --metrics-url
// flag).
func (e *Env) GaugeConfig(prometheusURL string) metrics.SourceConfig {
	return metrics.SourceConfig{Context: e.Context, AWSConfig: e.AWSConfig, PrometheusURL: prometheusURL, Clock: e.clk()}
}

// GaugeChoice says which gauge source the context names and describes it,
// without I/O ([metrics.ChooseSource]).
func (e *Env) GaugeChoice(prometheusURL string) (metrics.Choice, error) {
	return metrics.ChooseSource(e.GaugeConfig(prometheusURL))
}

// GaugeSource opens the context's gauge source ([metrics.NewSource]); a
// command opens it once (a source keeps what it reported, such as a
// CloudWatch limit met). Its errors are the caller's to word: one wrapping
// [metrics.ErrInvalidSource] is a setting to fix.
func (e *Env) GaugeSource(ctx context.Context, prometheusURL string) (*metrics.Source, error) {
	return metrics.NewSource(ctx, e.GaugeConfig(prometheusURL))
}

// AddKeyFileFlag registers --key-file, the chaos key file a command uses
// instead of the context's key source ([Env.KeySource]).
func AddKeyFileFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVar(target, "key-file", "", "chaos key file to use instead of the context's key source (mode 0600, base64 of 32+ random bytes)")
	_ = cmd.MarkFlagFilename("key-file")
}
