package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// ErrApprovalUnproven: a request's item says it is approved, and no
// approver's record says so. The item is written by whoever may write
// request# items (a requester too); it is never trusted alone.
var ErrApprovalUnproven = exitcode.New(exitcode.Mismatch, "the request's approval has no approver's record")

// proveApproved checks r, stored approved, against the record of the
// approval that made it so: the request.approve record written in the same
// change as r's item (r's write_id), under the approvers' audit prefix (not
// a record of asking, which a requester-only role may write, nor the data
// plane's), by r's deciding approver verified by STS, recording r's hash,
// status and expiry. One indexed read. A request approved by hand, or
// edited since its approval (a later expiry, other content), is refused.
func (s *Service) proveApproved(ctx context.Context, r Request) error {
	refused := func(why string) error {
		return fmt.Errorf("%w: request %s %s; it cannot be used: ask for a new one and have it approved with koshactl request approve",
			ErrApprovalUnproven, r.ID, why)
	}
	token := ""
	if r.raw != nil {
		token = r.raw.WriteID()
	}
	if token == "" {
		return refused("carries no write of its own")
	}
	l, err := s.trail.List(ctx, audit.Query{Subject: RequestPrefix + r.ID, Action: ActionRequestApprove})
	if err != nil {
		return fmt.Errorf("read the approval of request %s: %w", r.ID, err)
	}
	for _, rec := range l.Records {
		if rec.DataPlane || rec.Asked || rec.Change != token || rec.Actor != r.DecidedBy || rec.ActorSource != audit.ActorSTS {
			continue
		}
		var after struct {
			SHA256    string `json:"sha256"`
			Status    string `json:"status"`
			ExpiresAt string `json:"expires_at"`
		}
		if json.Unmarshal(rec.After, &after) == nil && after.SHA256 == r.SHA256 && after.Status == r.Status &&
			after.ExpiresAt == r.ExpiresAt.Format(time.RFC3339) {
			return nil
		}
	}
	return refused("is stored approved, but no approver's record of that approval exists (was the item written by hand?)")
}
