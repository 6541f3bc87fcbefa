// Package mcptools is the tool table of `koshactl mcp` (internal/cmd/mcp
// serves whatever table it is given): the read tools, which return what the
// commands print with -o json by calling their Read functions, and the
// proposal tools, one per lever action a kind of the context's registry
// offers an agent (its lever.Proposal: the tool's name and arguments), each
// the kind's own change made a change request through the context's guard.
package mcptools

import (
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/mcpserver"
)

// Tools is the server's tool table for env: the read tools, then the
// proposal tools unless the context is read-only for MCP.
func Tools(f *cmdenv.Factory, env *cmdenv.Env) []mcpserver.Tool {
	r, p := reader{f: f, env: env}, proposer{f: f, env: env}
	tools := []mcpserver.Tool{
		mcpserver.New("breaker_status", "Breaker status",
			"Every dependency's breaker: the override in force (from the control table) merged with the fleet's breaker_state gauges, whether the fleet obeys the override (fleet.verdict: confirmed, converging, not_obeyed, unconfirmed), per-instance counts. The JSON of `koshactl breaker status -o json`.",
			true, r.status),
		mcpserver.New("freeze_status", "Fleet freeze",
			"The fleet's freeze: whether it holds (no chaos fault, no drill, no planned window while it does), who set it, why, the incident's reference, until when. The JSON of `koshactl freeze status -o json`.",
			true, r.freeze),
		mcpserver.New("breaker_get", "One breaker override",
			"One dependency's override item: state, reason, actor, created and expiry. The JSON of `koshactl breaker get DEPENDENCY -o json`; a tool error (not found) when there is none.",
			true, r.get),
		mcpserver.New("audit_list", "Audit log",
			"The audit records of control-plane changes, newest first, filtered by time, subject, action or actor. The JSON of `koshactl audit list -o json`.",
			true, r.audit),
		mcpserver.New("ratelimit_get", "One rate-limit bucket",
			"One client's rate-limit bucket: tokens now, whether its next request is admitted, when it refills. The JSON of `koshactl ratelimit get CLIENT -o json`.",
			true, r.bucket),
		mcpserver.New("ratelimit_list", "Rate-limit buckets",
			"The rate-limit buckets stored (a scan), optionally only the clients being limited. The JSON of `koshactl ratelimit list -o json`.",
			true, r.buckets),
		mcpserver.New("pending_requests", "Change requests",
			"The change requests waiting for a person's approval (all: decided ones too; reviews: break-glass reviews), newest first, at most limit of them (default 50): the JSON of `koshactl request list -o json`, reading only (an expired request shows as expired without being marked), with next_cursor when there are more: pass it as cursor for the next page.",
			true, r.requests),
		mcpserver.New("drill_validate", "Validate drill files",
			"Check drill files without running them: every problem with its line and column. The JSON of `koshactl drill validate FILE... -o json`.",
			true, r.validate),
		mcpserver.New("drill_plan", "Plan a drill",
			"What a drill would do on this context, without doing it: every step, lever, rollback and expiry bound. The JSON of `koshactl drill plan FILE -o json`; the server's environment is not visible to the drill.",
			true, r.plan),
		mcpserver.New("game_day_summary", "Game-day summary",
			"The Markdown game-day summary of a drill run's journal (`koshactl drill report JOURNAL -o markdown --no-fetch`), every value escaped.",
			true, r.gameday),
	}
	if env.Context.MCP.ReadOnly {
		return tools
	}
	return append(tools, p.proposalTools(env.Kinds.Specs())...)
}
