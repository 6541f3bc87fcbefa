package kinds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// The chaos lever: a signed X-Kosha-Chaos header (chaos#STEP, then
// chaos#JTI), minted by chaos.sign. This file holds all of it: the kind,
// its plan, the rollback that withdraws the header from the run, its
// journal record, and the rollback drill recover rebuilds (the header
// lived only in the dead run's process).

// ChaosAuditAction is the audit action of a header minted by a drill (the
// same as koshactl chaos sign's).
const ChaosAuditAction = "chaos.sign"

// chaosSignKind is the chaos.sign step: mint a signed X-Kosha-Chaos header
// that later steps send.
//
//	chaos.sign:
//	  target: screening-sim   # required
//	  fault: error            # required: latency, error, timeout, reset
//	  ms: 250                 # latency only, required for it
//	  p: 1                    # probability, (0, 1]
//	  ttl: 5m                 # default 5m; at most 15m
//	  reason: breaker drill
//
// The header lives min(ttl, the time left before the drill's deadline,
// 15m). It is a bearer credential for fault injection: its value is an
// output (${steps.ID.header}) that never appears in a report, log or
// journal; the journal keeps its jti, fields and expiry. The mint is
// audited like koshactl chaos sign.
var chaosSignKind = leverKind{stepKind{name: "chaos.sign",
	summary: "mint a signed X-Kosha-Chaos header for later steps; expires by the drill's deadline (15m at most)",
	outputs: []string{"header", "header_name", "jti", "kid", "exp", "expires_at", "target", "fault"}, decode: decodeChaosSign},
	drill.LeverChaos}

func decodeChaosSign(d *drill.Decoder, n *yaml.Node) drill.Spec {
	m := d.Fields(n, "chaos.sign", "target", "fault", "ms", "p", "ttl", "reason")
	if m == nil {
		return nil
	}
	a := &chaosSign{req: chaos.MintRequest{P: chaos.ProbOne, TTL: chaos.DefaultTTL}}
	target, _, tok := parsed(m, "target", true, chaos.ParseTarget)
	fault, _, fok := parsed(m, "fault", true, chaos.ParseFault)
	a.req.Target, a.req.Fault = target, fault
	ok := tok && fok
	if ms, present := m.Int("ms", false); present {
		switch {
		case a.req.Fault != chaos.FaultLatency:
			m.Errorf("ms", "applies to fault latency only")
			ok = false
		case ms < chaos.MinMs || ms > chaos.MaxMs:
			m.Errorf("ms", "%d is outside %d..%d milliseconds", ms, chaos.MinMs, chaos.MaxMs)
			ok = false
		}
		a.req.Ms = ms
	} else if a.req.Fault == chaos.FaultLatency && ok && !m.Has("ms") {
		m.Decoder().Errorf(m.Node(), "chaos.sign: fault latency needs ms (the added latency, %d..%d)", chaos.MinMs, chaos.MaxMs)
		ok = false
	}
	if p, present, pok := parsed(m, "p", false, chaos.ParseProb); present {
		a.req.P, ok = p, ok && pok
	}
	if ttl, present := m.Duration("ttl", false); present {
		switch {
		case ttl > chaos.MaxTTL:
			m.Errorf("ttl", "%s exceeds the %s cap (the data plane refuses headers that live longer)", ttl, chaos.MaxTTL)
			ok = false
		case ttl < chaos.MinTTL:
			m.Errorf("ttl", "%s is below the %s minimum", ttl, chaos.MinTTL)
			ok = false
		}
		a.req.TTL = ttl
	}
	a.reason, _ = m.Template("reason", false)
	if !ok {
		return nil
	}
	return a
}

// parsed decodes key as a string that parse turns into a value, reporting
// what parse found wrong (a *chaos.FieldError's problem): present says key
// was given, ok that its value is valid.
func parsed[T any](m *drill.Map, key string, required bool, parse func(string) (T, error)) (v T, present, ok bool) {
	s, present := m.String(key, required)
	if !present {
		return v, false, false
	}
	v, err := parse(s)
	if fe := (*chaos.FieldError)(nil); errors.As(err, &fe) {
		m.Errorf(key, "%s", fe.Problem)
	} else if err != nil {
		m.Errorf(key, "%v", err)
	}
	return v, true, err == nil
}

type chaosSign struct {
	req    chaos.MintRequest
	reason drill.Template
}

var _ runtime.Mutating = (*chaosSign)(nil)

func (a *chaosSign) Describe(*runtime.RunContext) string {
	desc := a.req.Fault.String()
	if a.req.Fault == chaos.FaultLatency {
		desc += fmt.Sprintf(" %dms", a.req.Ms)
	}
	return fmt.Sprintf("mint a chaos header: %s on %s, p=%s", desc, a.req.Target, a.req.P)
}

// Plan implements Mutating.
func (a *chaosSign) Plan(rc *runtime.RunContext) *runtime.PlanLever {
	ttl := cmp.Or(a.req.TTL, chaos.DefaultTTL)
	bound := min(ttl, rc.Drill.Timeout, chaos.MaxTTL).Truncate(time.Second)
	return &runtime.PlanLever{Subject: "chaos#" + rc.CurrentStep(), Inverse: "withdraw the header from the run (it cannot be revoked)",
		ExpiresWithinSeconds: drill.Seconds(bound), Expiry: fmt.Sprintf("the header expires after min(ttl %s, time left, %s)", ttl, chaos.MaxTTL)}
}

// Prepare registers the header's rollback: a minted header cannot be
// revoked, so the rollback withdraws it from the run (no later request
// sends it) and the journal records when it expires.
func (a *chaosSign) Prepare(_ context.Context, rc *runtime.RunContext) (runtime.Rollback, error) {
	if err := runtime.NeedService(rc.Deps.Minter != nil && rc.Deps.Audit != nil, "chaos key"); err != nil {
		return nil, err
	}
	id := rc.CurrentStep()
	l := rc.NewLever("chaos#"+id, nil)
	return &chaosRollback{leverUndo{id, l}}, nil
}

func (a *chaosSign) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	svc := rc.Deps
	req := a.req
	ttl := min(req.TTL, rc.Remaining(), chaos.MaxTTL).Truncate(time.Second)
	if ttl < chaos.MinTTL {
		return nil, fmt.Errorf("mint chaos header: the drill has %s left, too little for a header", rc.Remaining())
	}
	req.TTL = ttl
	m, err := svc.Minter.Mint(ctx, req)
	if err != nil {
		return nil, err
	}
	reason, err := stepReason(rc, a.reason)
	if err != nil {
		return nil, err
	}
	if _, err := rc.Audit().Append(ctx, audit.Entry{Actor: svc.Actor, Action: ChaosAuditAction, Subject: "chaos#" + m.Header.JTI,
		Reason: rc.Reason(reason), After: m.Record()}); err != nil {
		return nil, fmt.Errorf("chaos header jti %s was signed but will not be used, because %w", m.Header.JTI, err)
	}
	if l, ok := rc.Lever("chaos#" + rc.CurrentStep()); ok {
		l.SetWritten(m.Header.JTI, m.Header.ExpTime())
	}
	rc.AddSecret(m.Value())
	rc.AddSecret(m.Header.SigString())
	out := runtime.NewOutputs().SetSecret("header", m.Value()).Set("header_name", chaos.HeaderName).
		Set("jti", m.Header.JTI).Set("kid", m.Header.KID).Set("exp", strconv.FormatInt(m.Header.Exp, 10)).
		Set("expires_at", m.Header.ExpTime().UTC().Format(time.RFC3339)).
		Set("target", string(m.Header.Target)).Set("fault", m.Header.Fault.String())
	out.Detail = fmt.Sprintf("%s, jti %s, kid %s, expires %s", m.Header.Summary(), m.Header.JTI, m.Header.KID, m.Header.ExpTime().UTC().Format(time.RFC3339))
	return out, nil
}

// chaosRollback withdraws a minted header from the run; its target is
// the step that minted it.
type chaosRollback struct{ leverUndo }

var (
	_ runtime.Rollback = (*chaosRollback)(nil)
)

func (r *chaosRollback) Subject() string {
	if jti, ok := r.lever.Written().(string); ok {
		return "chaos#" + jti
	}
	return "chaos#" + r.target
}

func (r *chaosRollback) Describe() string {
	return "withdraw the chaos header (it cannot be revoked; it expires on its own)"
}

func (r *chaosRollback) Undo(_ context.Context, rc *runtime.RunContext) (string, error) {
	exp := r.lever.ExpiresAt()
	if exp.IsZero() {
		return "no header was minted", nil
	}
	rc.Withdraw(r.target, "header")
	if !rc.Now().Before(exp) {
		return "expired at " + exp.UTC().Format(time.RFC3339), nil
	}
	return fmt.Sprintf("withdrawn: no later request sends it; it expires at %s", exp.UTC().Format(time.RFC3339)), nil
}

// LeverRecord implements Rollback.
func (r *chaosRollback) LeverRecord() *drill.LeverRecord {
	rec := &drill.LeverRecord{Kind: drill.LeverChaos, Inverse: "withdraw"}
	rec.JTI, _ = r.lever.Written().(string)
	return rec
}

// recoverChaos is a chaos header's rollback after its run died: the
// header lived only in that process, so it is withdrawn already.
func recoverChaos(rec drill.RollbackRecord) runtime.Rollback {
	done := "withdrawn: it lived only in the run's process"
	if rec.ExpiresAt != nil {
		done += "; it expires " + rec.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return &settled{rec.Subject, "withdraw the chaos header", done}
}
