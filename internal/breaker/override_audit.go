package breaker

import (
	"context"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/audit"
)

// Audit actions recorded for override changes.
const (
	ActionForceOpen = "breaker.force-open"
	ActionClear     = "breaker.clear"
)

// OverrideAuditor appends audit records; *audit.Log implements it.
type OverrideAuditor interface {
	Append(ctx context.Context, e audit.Entry) (audit.Record, error)
}

// OverrideAuditView is how an override appears in audit records' before/after.
type OverrideAuditView struct {
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Actor     string `json:"actor"`
	CreatedAt int64  `json:"created_at"`
	ExpiresAt *int64 `json:"expires_at,omitempty"`
	Version   int64  `json:"version"`
}

func auditView(o *Override) any {
	if o == nil {
		return nil
	}
	v := OverrideAuditView{State: o.State, Reason: o.Reason, Actor: o.Actor, CreatedAt: o.CreatedAt.UnixMilli(), Version: o.Version}
	if o.Expires() {
		ms := o.ExpiresAt.UnixMilli()
		v.ExpiresAt = &ms
	}
	return v
}

// ForceAudited forces an override (req.DryRun is ignored: it always writes)
// and records it. When the override was written but the audit record was
// not, the result is returned with an error wrapping audit.ErrAuditWrite.
func (s *Overrides) ForceAudited(ctx context.Context, log OverrideAuditor, req ForceRequest) (ForceResult, audit.Record, error) {
	req.DryRun = false
	res, err := s.Force(ctx, req)
	if err != nil {
		return res, audit.Record{}, err
	}
	rec, err := log.Append(ctx, audit.Entry{Actor: req.Actor, Action: ActionForceOpen, Subject: OverrideKey(req.Dependency),
		Reason: req.Reason, Before: auditView(res.Before), After: auditView(&res.After)})
	if err != nil {
		return res, rec, fmt.Errorf("%s was forced open, but %w", req.Dependency, err)
	}
	return res, rec, nil
}

// ClearAudited clears an override and records it. Nothing is recorded when
// there was nothing to clear.
func (s *Overrides) ClearAudited(ctx context.Context, log OverrideAuditor, dependency, actor, reason string) (ClearResult, audit.Record, error) {
	res, err := s.Clear(ctx, dependency, false)
	return s.auditClear(ctx, log, dependency, actor, reason, res, err)
}

// clearAudited is ClearAudited after the read of cur.
func (s *Overrides) clearAudited(ctx context.Context, log OverrideAuditor, dependency string, cur *Override, actor, reason string) (ClearResult, audit.Record, error) {
	res, err := s.clearFrom(ctx, dependency, *cur, false)
	return s.auditClear(ctx, log, dependency, actor, reason, res, err)
}

func (s *Overrides) auditClear(ctx context.Context, log OverrideAuditor, dependency, actor, reason string, res ClearResult, err error) (ClearResult, audit.Record, error) {
	if err != nil || res.Before == nil {
		return res, audit.Record{}, err
	}
	rec, err := log.Append(ctx, audit.Entry{Actor: actor, Action: ActionClear, Subject: OverrideKey(dependency),
		Reason: reason, Before: auditView(res.Before)})
	if err != nil {
		return res, rec, fmt.Errorf("%s was cleared, but %w", dependency, err)
	}
	return res, rec, nil
}
