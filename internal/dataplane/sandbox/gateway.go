package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/build"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/exposition"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
)

// rateLimitTimeout bounds one rate-limit take; past it the request is let
// through (the degradation matrix: the store unavailable, rate limiting
// fails open).
const rateLimitTimeout = 500 * time.Millisecond

// MCPProtocolVersion is the MCP revision the endpoint speaks.
const MCPProtocolVersion = "2025-06-18"

// gateway serves the tool endpoint: routing, load shedding, the bearer
// principal, the rate limit, the chaos header and the tools.
type gateway struct {
	cfg        Config
	fleet      *Fleet
	down       map[string]Downstream
	outbox     *Outbox
	deferred   *deferrals
	principals *principals
	limiter    *limiter.Limiter
	chaos      *chaosGate
	m          *metrics
	clock      clock.Clock
	logger     *slog.Logger

	shedInFlight, shedMinBudget, shedDepOpen *exposition.Counter
}

// ServeHTTP handles POST /mcp: one JSON-RPC request per POST.
func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeRPC(w, http.StatusMethodNotAllowed, rpcResponse{Error: &RPCError{Code: CodeInvalidRequest,
			Message: "POST one JSON-RPC 2.0 request (tools/list, tools/call) to this endpoint"}})
		return
	}
	in, err := g.fleet.Route(r.Header.Get(HeaderInstance))
	if err != nil {
		writeRPC(w, http.StatusBadRequest, rpcResponse{Error: &RPCError{Code: CodeInvalidRequest, Message: err.Error()}})
		return
	}
	w.Header().Set(HeaderInstance, in.name)
	code := g.serve(w, r, in)
	g.m.observeRequest(in.name, code)
}

// serve runs one request on instance in and returns the HTTP status sent.
func (g *gateway) serve(w http.ResponseWriter, r *http.Request, in *Instance) int {
	reply := func(status int, id json.RawMessage, result any, rerr *RPCError) int {
		writeRPC(w, status, rpcResponse{ID: id, Result: result, Error: rerr})
		return status
	}
	shedder := in.Shedder()
	if err := shedder.Enter(); err != nil {
		g.shedInFlight.Inc()
		return reply(http.StatusServiceUnavailable, nil, nil, &RPCError{Code: CodeOverloaded,
			Message: fmt.Sprintf("%s has %d requests in flight: shed, retry after 1s", in.name, shedder.MaxInFlight()),
			Data:    &ToolError{Code: ErrCodeOverloaded, Message: "load shed", RetryAfter: seconds(resilience.ShedRetryAfter)}})
	}
	defer shedder.Leave()

	p, ok := g.principals.authenticate(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="koshactl-sandbox"`)
		return reply(http.StatusUnauthorized, nil, nil, &RPCError{Code: CodeUnauthorized,
			Message: "send Authorization: Bearer <token> with a token of the sandbox's principals (docs/sandbox.md)",
			Data:    &ToolError{Code: ErrCodeUnauthorized, Message: "missing or unknown bearer token"}})
	}
	req, rerr := readRequest(r)
	if rerr != nil {
		var id json.RawMessage
		if req != nil {
			id = req.ID
		}
		return reply(http.StatusBadRequest, id, nil, rerr)
	}
	d, err := g.take(r.Context(), p.Client)
	if err != nil {
		return reply(http.StatusServiceUnavailable, req.ID, nil, &RPCError{Code: CodeInternal, Message: err.Error()})
	}
	if !d.Allowed {
		g.m.rateLimited.Inc()
		retry := max(1, seconds(d.RetryAfter))
		return reply(http.StatusTooManyRequests, req.ID, nil, &RPCError{Code: CodeRateLimited,
			Message: fmt.Sprintf("client %s is over its rate limit (%s): retry after %ds", p.Client, d.Limits, retry),
			Data:    &ToolError{Code: ErrCodeRateLimited, Message: "rate limited", RetryAfter: retry}})
	}
	if req.notification() {
		w.WriteHeader(http.StatusAccepted)
		return http.StatusAccepted
	}
	switch req.Method {
	case "initialize":
		return reply(http.StatusOK, req.ID, map[string]any{
			"protocolVersion": MCPProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "koshactl-sandbox", "version": build.Get().Version},
		}, nil)
	case "ping":
		return reply(http.StatusOK, req.ID, struct{}{}, nil)
	case "tools/list":
		return reply(http.StatusOK, req.ID, map[string]any{"tools": toolSpecs}, nil)
	case "tools/call":
	default:
		return reply(http.StatusOK, req.ID, nil, &RPCError{Code: CodeMethodNotFound,
			Message: fmt.Sprintf("method %q not found: the sandbox serves initialize, ping, tools/list and tools/call", req.Method)})
	}
	var params callParams
	if err := json.Unmarshal(req.Params, &params); err != nil || params.Name == "" {
		return reply(http.StatusOK, req.ID, nil, &RPCError{Code: CodeInvalidParams, Message: `tools/call needs params {"name": TOOL, "arguments": {...}}`})
	}
	if _, ok := in.tools[params.Name]; !ok {
		return reply(http.StatusOK, req.ID, nil, &RPCError{Code: CodeInvalidParams,
			Message: fmt.Sprintf("unknown tool %q: the tools are %s", params.Name, strings.Join(Tools(), ", "))})
	}
	ctx, cancel, err := resilience.ContextFromHeader(r.Context(), r.Header)
	defer cancel()
	if err != nil {
		return reply(http.StatusBadRequest, req.ID, nil, &RPCError{Code: CodeInvalidRequest, Message: err.Error()})
	}
	plan := g.chaos.plan(ctx, r.Header, p, in)
	start := time.Now()
	res, outcome := g.callTool(ctx, in, params.Name, params.Arguments, plan)
	g.m.observeTool(params.Name, outcome, time.Since(start))
	in.served.Add(1)
	return reply(http.StatusOK, req.ID, res, nil)
}

// take runs the reference take for client. A take the store cannot answer
// in time fails open; an error means the request itself is gone.
func (g *gateway) take(ctx context.Context, client string) (limiter.Decision, error) {
	tctx, cancel := context.WithTimeout(ctx, rateLimitTimeout)
	d, err := g.limiter.Take(tctx, client)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return d, fmt.Errorf("rate limit: %w", ctx.Err())
		}
		g.m.rateDecision.WithLabelValues(limiter.OutcomeFailOpenError.String()).Inc()
		return limiter.Decision{Allowed: true, FailOpen: true, Outcome: limiter.OutcomeFailOpenError, Cause: err}, nil
	}
	return d, nil
}

// callTool runs a tool on in and returns its MCP result and the outcome
// label.
func (g *gateway) callTool(ctx context.Context, in *Instance, name string, args json.RawMessage, plan *FaultPlan) (ToolResult, string) {
	tctx, cancel, err := in.Shedder().StartTool(ctx, in.tools[name])
	defer cancel()
	if err != nil {
		dep := ""
		if resilience.KindOf(err) == resilience.KindCircuitOpen {
			g.shedDepOpen.Inc()
			if deps := toolDependencies[name]; len(deps) == 1 {
				dep = deps[0]
			}
		} else {
			g.shedMinBudget.Inc()
		}
		te := g.fail(in, dep, err)
		return g.errorResult(te), te.Code
	}
	var (
		v       any
		outcome = ToolOK
		te      *toolError
	)
	switch name {
	case ToolSearchKnowledgeBase:
		v, outcome, te = g.search(tctx, in, args, plan)
	case ToolScreenEntity:
		v, outcome, te = g.screen(tctx, in, args, plan)
	case ToolRaiseDispute:
		v, te = g.write(tctx, in, args, plan, EventDisputeRaised, "dsp", "accepted")
	case ToolFlagTransaction:
		v, te = g.write(tctx, in, args, plan, EventTransactionFlagged, "flg", "flagged")
	case ToolGetServiceHealth:
		if te = decodeArgs(args, &struct{}{}); te == nil {
			v = healthOf(in, g.cfg.OverrideRefresh)
		}
	}
	if te != nil {
		return g.errorResult(te), te.Code
	}
	res, err := newToolResult(v, false)
	if err != nil {
		return g.errorResult(&toolError{ToolError: ToolError{Code: "internal", Message: err.Error()}}), "internal"
	}
	return res, outcome
}

// fail builds the tool error of a failed call to dep on in; a refusal by
// the breaker says why (forced by an operator, or open on this instance) and
// when to retry.
func (g *gateway) fail(in *Instance, dep string, err error) *toolError {
	te := failure(dep, err)
	if te.Code != ErrCodeDependencyUnavailable || te.Dependency == "" {
		return te
	}
	d, ok := in.Dependency(te.Dependency)
	if !ok || d.Breaker == nil {
		return te
	}
	snap := d.Breaker.Snapshot()
	switch snap.State {
	case circuit.ForcedOpen:
		te.Message = fmt.Sprintf("%s is forced open fleet-wide by an operator override", te.Dependency)
		if d.Force != nil && d.Force.Last().Reason != "" {
			te.Message += " (reason: " + d.Force.Last().Reason + ")"
		}
	case circuit.Open:
		te.Message = fmt.Sprintf("%s's circuit breaker on %s is open: %d of the last %d calls failed", te.Dependency, in.name, snap.Failures, snap.Calls)
	case circuit.HalfOpen:
		te.Message = fmt.Sprintf("%s's circuit breaker on %s is half-open and its probe calls are taken", te.Dependency, in.name)
	default: // closed again since the refusal: keep the refusal's own words
	}
	if te.RetryAfter == 0 {
		te.RetryAfter = max(1, seconds(in.retryHint(te.Dependency, g.cfg.OverrideRefresh)))
	}
	return te
}

func (g *gateway) errorResult(te *toolError) ToolResult {
	res, err := newToolResult(te.ToolError, true)
	if err != nil {
		return ToolResult{Structured: json.RawMessage(`{"error":"internal","message":"encode the tool error"}`), IsError: true}
	}
	return res
}

// do runs one logical call through pol, counting its outcome and retries.
func (g *gateway) do(ctx context.Context, pol *resilience.Policy, call resilience.Call, fn resilience.AttemptFunc) error {
	dc := g.m.deps[pol.Dependency().Name]
	err := pol.Do(ctx, call, func(actx context.Context, a resilience.Attempt) error {
		if a.N > 1 {
			dc.retries.Inc()
		}
		return fn(actx, a)
	})
	dc.outcomes[callOutcome(err)].Inc()
	return err
}

// coreContext is core-api's side of the hop: its deadline is the
// X-Request-Deadline the gateway sent (the request deadline less the hop's
// margin), carried through its wire format.
func coreContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return ctx, func() {}
	}
	wire, err := resilience.ParseDeadline(resilience.FormatDeadline(deadline))
	if err != nil { // cannot happen: we formatted it
		return ctx, func() {}
	}
	if d, ok := ctx.Deadline(); ok && !wire.Before(d) {
		// The attempt's own timeout ends first (it is at most the hop
		// deadline): the header changes nothing, and no timer is needed.
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, wire)
}

// search is search_knowledge_base: gateway → core-api (reads); core-api →
// openai (embeddings), then PostgreSQL (rows). openai down gives full-text
// ranking marked degraded; core-api or PostgreSQL down fails the call
// naming the dependency.
func (g *gateway) search(ctx context.Context, in *Instance, raw json.RawMessage, plan *FaultPlan) (any, string, *toolError) {
	var a searchArgs
	if te := decodeArgs(raw, &a); te != nil {
		return nil, "", te
	}
	a.Query = trimArg(a.Query, 500)
	if a.Query == "" {
		return nil, "", invalidParams("query is required")
	}
	switch {
	case a.TopK == 0:
		a.TopK = 3
	case a.TopK < 1 || a.TopK > 10:
		return nil, "", invalidParams("top_k %d: use 1 to 10", a.TopK)
	}
	var res SearchResult
	err := g.do(ctx, in.coreReads, resilience.Call{}, func(actx context.Context, at resilience.Attempt) error {
		if err := g.down[CoreAPI].Call(actx, plan); err != nil {
			return err
		}
		cctx, cancel := coreContext(actx, at.Deadline)
		defer cancel()
		vector := g.do(cctx, in.openai, resilience.Call{}, func(c context.Context, _ resilience.Attempt) error {
			return g.down[OpenAI].Call(c, plan)
		}) == nil
		if err := g.do(cctx, in.postgres, resilience.Call{}, func(c context.Context, _ resilience.Attempt) error {
			return g.down[Postgres].Call(c, plan)
		}); err != nil {
			return newUpstreamError(Postgres, err)
		}
		res = SearchResult{Results: rank(a.Query, a.TopK, vector), Ranking: "hybrid"}
		if !vector {
			res.Ranking, res.Degraded, res.DegradedReason = "full_text", true, ReasonEmbeddingsUnavailable
		}
		return nil
	})
	if err != nil {
		return nil, "", g.fail(in, CoreAPI, err)
	}
	if res.Results == nil {
		res.Results = []SearchHit{}
	}
	if res.Degraded {
		return res, ToolDegraded, nil
	}
	return res, ToolOK, nil
}

// screen is screen_entity: gateway → screening-sim. When screening-sim does
// not answer (its breaker open, or the call failed), the request is
// recorded for later and the client told when to retry.
func (g *gateway) screen(ctx context.Context, in *Instance, raw json.RawMessage, plan *FaultPlan) (any, string, *toolError) {
	var a screenArgs
	if te := decodeArgs(raw, &a); te != nil {
		return nil, "", te
	}
	a.Name = trimArg(a.Name, 200)
	if a.Name == "" {
		return nil, "", invalidParams("name is required")
	}
	if a.EntityType != "" && a.EntityType != "person" && a.EntityType != "organization" {
		return nil, "", invalidParams("entity_type %q: use person or organization", a.EntityType)
	}
	err := g.do(ctx, in.screening, resilience.Call{}, func(actx context.Context, _ resilience.Attempt) error {
		return g.down[ScreeningSim].Call(actx, plan)
	})
	if err != nil {
		retry := in.retryHint(ScreeningSim, g.cfg.OverrideRefresh)
		if resilience.KindOf(err) != resilience.KindCircuitOpen || retry == 0 {
			retry = max(retry, g.cfg.DeferRetryAfter)
		}
		d := Deferral{ID: newID("dfr"), Name: a.Name, Country: a.Country, RecordedAt: g.clock.Now().UTC(), Instance: in.name}
		g.deferred.add(d)
		return ScreenResult{Status: "deferred", Name: a.Name, RetryAfter: seconds(retry), DeferralID: d.ID,
			Reason: ScreeningSim + " unavailable (" + callOutcome(err) + "): request recorded for later"}, ToolDeferred, nil
	}
	status, score, lists := screenVerdict(a.Name)
	return ScreenResult{Status: status, Name: a.Name, Score: score, Lists: lists, ScreenedAt: g.clock.Now().UTC()}, ToolOK, nil
}

// write is raise_dispute and flag_transaction_for_review: gateway → core-api
// (writes: one attempt; the idempotency key makes the client's retry safe);
// core-api writes the record and its outbox event in one PostgreSQL
// transaction. SQS is not on the path: the relay publishes later.
func (g *gateway) write(ctx context.Context, in *Instance, raw json.RawMessage, plan *FaultPlan, kind, prefix, status string) (any, *toolError) {
	var a writeArgs
	if te := decodeArgs(raw, &a); te != nil {
		return nil, te
	}
	a.TransactionID, a.Reason = trimArg(a.TransactionID, 100), trimArg(a.Reason, 500)
	if a.TransactionID == "" || a.Reason == "" {
		return nil, invalidParams("transaction_id and reason are required")
	}
	if a.Amount != nil && (*a.Amount <= 0 || math.IsInf(*a.Amount, 0)) {
		return nil, invalidParams("amount %v must be positive", *a.Amount)
	}
	if len(a.IdempotencyKey) > 200 {
		return nil, invalidParams("idempotency_key is longer than 200 characters")
	}
	var (
		ev  OutboxEvent
		dup bool
	)
	err := g.do(ctx, in.coreWrites, resilience.Call{IdempotencyKey: a.IdempotencyKey}, func(actx context.Context, at resilience.Attempt) error {
		if err := g.down[CoreAPI].Call(actx, plan); err != nil {
			return err
		}
		cctx, cancel := coreContext(actx, at.Deadline)
		defer cancel()
		if err := g.do(cctx, in.postgres, resilience.Call{}, func(c context.Context, _ resilience.Attempt) error {
			if err := g.down[Postgres].Call(c, plan); err != nil {
				return err
			}
			ev, dup = g.outbox.write(kind, prefix, a.TransactionID, at.IdempotencyKey)
			return nil
		}); err != nil {
			return newUpstreamError(Postgres, err)
		}
		return nil
	})
	if err != nil {
		return nil, g.fail(in, CoreAPI, err)
	}
	outbox := "pending"
	if !ev.PublishedAt.IsZero() {
		outbox = "published"
	}
	return WriteResult{Status: status, ID: ev.RecordID, TransactionID: ev.TransactionID, EventID: ev.EventID,
		Outbox: outbox, Duplicate: dup}, nil
}
