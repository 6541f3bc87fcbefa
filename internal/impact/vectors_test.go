package impact_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// vectorFile is docs/contracts/vectors/degradation-matrix.json.
type vectorFile struct {
	Description string             `json:"description"`
	Contract    string             `json:"contract"`
	Behaviours  []impact.Behaviour `json:"behaviours"`
	Tools       []impact.Tool      `json:"tools"`
	Rows        []impact.Row       `json:"rows"`
	Impact      []impactCase       `json:"impact"`
	Answers     []answerCase       `json:"answers"`
	Checks      []checkCase        `json:"checks"`
	Estimates   []estimateCase     `json:"estimates"`
}

// impactCase: dependencies forced together, and what the tools do.
type impactCase struct {
	Name string     `json:"name"`
	Down []string   `json:"forced"`
	Want impactWant `json:"want"`
}

// impactWant is the part of a report every implementation computes.
type impactWant struct {
	Tools     []toolWant `json:"tools"`
	NotObeyed []string   `json:"not_obeyed"`
	Unknown   []string   `json:"unknown"`
}

// toolWant is one tool of an impact.
type toolWant struct {
	Tool      string           `json:"tool"`
	Behaviour impact.Behaviour `json:"behaviour"`
	Because   []string         `json:"because"`
}

// answerCase: a tool's answer and the behaviour a client reads from it.
type answerCase struct {
	Name       string           `json:"name"`
	IsError    bool             `json:"is_error"`
	Structured map[string]any   `json:"structured"`
	Behaviour  impact.Behaviour `json:"behaviour"`
}

// checkCase: an answer of tool while dependency is down, and whether it
// shows the matrix's effect (problem: why not).
type checkCase struct {
	Name       string         `json:"name"`
	Dependency string         `json:"dependency"`
	Tool       string         `json:"tool"`
	IsError    bool           `json:"is_error"`
	Structured map[string]any `json:"structured"`
	Matches    bool           `json:"matches"`
}

// estimateCase: a rate and a span, and the calls an estimate states.
type estimateCase struct {
	Name           string  `json:"name"`
	CallsPerMinute float64 `json:"calls_per_minute"`
	ForSeconds     float64 `json:"for_seconds"`
	Calls          int64   `json:"calls"`
}

// answers are tool answers as the reference data plane gives them.
var answers = map[string]struct {
	isError    bool
	structured map[string]any
}{
	"hybrid search":           {false, map[string]any{"ranking": "hybrid", "degraded": false, "results": []any{}}},
	"full-text search":        {false, map[string]any{"ranking": "full_text", "degraded": true, "degraded_reason": "embeddings_unavailable", "results": []any{}}},
	"search degraded, other":  {false, map[string]any{"ranking": "full_text", "degraded": true, "degraded_reason": "index_rebuilding"}},
	"screening clear":         {false, map[string]any{"status": "clear", "name": "Ada", "score": 0.03}},
	"screening deferred":      {false, map[string]any{"status": "deferred", "name": "Ada", "retry_after_s": 5.0, "deferral_id": "dfr_1"}},
	"deferred, no retry":      {false, map[string]any{"status": "deferred", "name": "Ada"}},
	"deferred, retry 0":       {false, map[string]any{"status": "deferred", "name": "Ada", "retry_after_s": 0.0}},
	"deferred, retry as text": {false, map[string]any{"status": "deferred", "name": "Ada", "retry_after_s": "5"}},
	"dispute accepted":        {false, map[string]any{"status": "accepted", "id": "dsp_1", "outbox": "pending", "duplicate": false}},
	"core-api unavailable":    {true, map[string]any{"error": "dependency_unavailable", "dependency": "core-api", "retry_after_s": 5.0, "message": "core-api is forced open"}},
	"core-api, no retry":      {true, map[string]any{"error": "dependency_unavailable", "dependency": "core-api", "message": "core-api is forced open"}},
	"postgres error":          {true, map[string]any{"error": "dependency_error", "dependency": "postgres", "retry_after_s": 1.0}},
	"core-api timeout":        {true, map[string]any{"error": "timeout", "dependency": "core-api", "retry_after_s": 1.0}},
	"health unavailable":      {false, map[string]any{"instance": "gw-1", "status": "unavailable", "dependencies": []any{}}},
	"error, degraded flag":    {true, map[string]any{"error": "dependency_unavailable", "degraded": true}},
	"deferred and degraded":   {false, map[string]any{"status": "deferred", "degraded": true, "retry_after_s": 3.0}},
	"degraded as text":        {false, map[string]any{"degraded": "true"}},
	"empty answer":            {false, map[string]any{}},
}

// TestContractVectors generates docs/contracts/vectors/degradation-matrix.json
// from the matrix and its rules (Static, Classify, Effect.Check, About)
// and fails when the checked-in file differs.
func TestContractVectors(t *testing.T) {
	doc := vectorFile{
		Description: "The degradation matrix (docs/contracts/degradation-matrix.md, LLD §8) as data: behaviours in order from " +
			"harmless to worst; the tools (a data tool goes through core-api); the rows, one per dependency, each naming the " +
			"tools it changes (every other tool is unaffected), the behaviour, the signal a client sees (error: the answer is a " +
			"tool error; fields: exact values of the structured answer; positive: fields holding a number above zero), and " +
			"whether the data plane has a breaker an override forces. impact: dependencies forced together -> per tool the worst " +
			"behaviour of the obeyed ones (no breaker: not obeyed; no row: unknown) and which dependencies cause it, tools in " +
			"the tools' order, listing every tool a row names. answers: a tool answer -> the behaviour a client reads (tool " +
			"error: failed; status \"deferred\": deferred; degraded true: degraded; else unaffected). checks: an answer while a " +
			"dependency is down -> whether it shows the row's effect on the tool (the behaviour read and the signal). " +
			"estimates: calls a minute and a span -> the calls stated (rate x minutes, nearest whole number below 100, two " +
			"significant figures from 100 on, halves away from zero; 9223372036854775807 from 9e18 on; 3600 s when the span is 0: " +
			"until cleared). Generated from the Go code by make vectors.",
		Contract:   "docs/contracts/degradation-matrix.md",
		Behaviours: impact.Behaviours(),
		Tools:      impact.Tools(),
		Rows:       impact.Matrix(),
	}
	for _, c := range []struct {
		name string
		down []string
	}{
		{"openai", []string{impact.OpenAI}},
		{"screening-sim", []string{impact.ScreeningSim}},
		{"core-api", []string{impact.CoreAPI}},
		{"postgres: no breaker", []string{impact.Postgres}},
		{"sqs: no breaker", []string{impact.SQS}},
		{"dynamodb: no breaker", []string{impact.DynamoDB}},
		{"cognito-jwks: no breaker", []string{impact.CognitoJWKS}},
		{"unknown dependency", []string{"redis"}},
		{"openai and core-api: failed is worse than degraded", []string{impact.OpenAI, impact.CoreAPI}},
		{"core-api and openai: the same, in the other order", []string{impact.CoreAPI, impact.OpenAI}},
		{"screening-sim and openai: two tools", []string{impact.ScreeningSim, impact.OpenAI}},
		{"core-api and postgres: only core-api is obeyed", []string{impact.CoreAPI, impact.Postgres}},
		{"every dependency", []string{impact.OpenAI, impact.ScreeningSim, impact.DynamoDB, impact.SQS, impact.Postgres, impact.CoreAPI, impact.CognitoJWKS}},
		{"named twice", []string{impact.ScreeningSim, impact.ScreeningSim}},
		{"none", []string{}},
	} {
		r := impact.Static(impact.Request{Dependencies: c.down})
		w := impactWant{Tools: []toolWant{}, NotObeyed: []string{}, Unknown: []string{}}
		for _, ti := range r.Tools {
			w.Tools = append(w.Tools, toolWant{Tool: ti.Tool, Behaviour: ti.Behaviour, Because: ti.Because})
		}
		for _, d := range r.Dependencies {
			switch {
			case !d.InMatrix:
				w.Unknown = append(w.Unknown, d.Dependency)
			case !d.Obeyed:
				w.NotObeyed = append(w.NotObeyed, d.Dependency)
			}
		}
		doc.Impact = append(doc.Impact, impactCase{Name: c.name, Down: c.down, Want: w})
	}
	for _, name := range sortedNames(answers) {
		a := answers[name]
		doc.Answers = append(doc.Answers, answerCase{Name: name, IsError: a.isError, Structured: a.structured,
			Behaviour: impact.Classify(a.isError, a.structured)})
	}
	for _, c := range []struct{ dep, tool, answer string }{
		{impact.OpenAI, impact.ToolSearchKnowledgeBase, "full-text search"},
		{impact.OpenAI, impact.ToolSearchKnowledgeBase, "hybrid search"},
		{impact.OpenAI, impact.ToolSearchKnowledgeBase, "search degraded, other"},
		{impact.OpenAI, impact.ToolScreenEntity, "screening clear"},
		{impact.OpenAI, impact.ToolScreenEntity, "screening deferred"},
		{impact.ScreeningSim, impact.ToolScreenEntity, "screening deferred"},
		{impact.ScreeningSim, impact.ToolScreenEntity, "deferred, no retry"},
		{impact.ScreeningSim, impact.ToolScreenEntity, "deferred, retry 0"},
		{impact.ScreeningSim, impact.ToolScreenEntity, "deferred, retry as text"},
		{impact.ScreeningSim, impact.ToolScreenEntity, "screening clear"},
		{impact.ScreeningSim, impact.ToolSearchKnowledgeBase, "hybrid search"},
		{impact.CoreAPI, impact.ToolRaiseDispute, "core-api unavailable"},
		{impact.CoreAPI, impact.ToolRaiseDispute, "core-api, no retry"},
		{impact.CoreAPI, impact.ToolFlagTransaction, "core-api timeout"},
		{impact.CoreAPI, impact.ToolSearchKnowledgeBase, "postgres error"},
		{impact.CoreAPI, impact.ToolGetServiceHealth, "health unavailable"},
		{impact.CoreAPI, impact.ToolScreenEntity, "screening clear"},
		{impact.Postgres, impact.ToolSearchKnowledgeBase, "core-api unavailable"},
		{impact.Postgres, impact.ToolRaiseDispute, "core-api, no retry"},
		{impact.Postgres, impact.ToolRaiseDispute, "postgres error"},
		{impact.SQS, impact.ToolRaiseDispute, "dispute accepted"},
		{impact.SQS, impact.ToolRaiseDispute, "core-api unavailable"},
		{impact.DynamoDB, impact.ToolScreenEntity, "screening clear"},
		{impact.DynamoDB, impact.ToolScreenEntity, "screening deferred"},
	} {
		row, ok := impact.Lookup(c.dep)
		if !ok {
			t.Fatalf("no row %s", c.dep)
		}
		a := answers[c.answer]
		doc.Checks = append(doc.Checks, checkCase{Name: c.dep + " / " + c.tool + ": " + c.answer, Dependency: c.dep, Tool: c.tool,
			IsError: a.isError, Structured: a.structured, Matches: row.Effect(c.tool).Check(a.isError, a.structured) == nil})
	}
	for _, e := range []estimateCase{{"", 25, 1800, 0}, {"", 25, 0, 0}, {"", 0.4, 60, 0}, {"", 0.5, 60, 0}, {"", 1.5, 60, 0},
		{"", 3.3, 1800, 0}, {"", 41.7, 1800, 0}, {"", 0.01, 1800, 0}, {"", 0, 1800, 0}, {"", 1234, 3600, 0}, {"", 99.4, 60, 0},
		{"", 99.5, 60, 0}, {"", 12345, 7200, 0}, {"", 999.5, 60, 0}, {"", 0.49999999999999994, 60, 0}, {"", 1e300, 60, 0}} {
		e.Name = fmt.Sprintf("%v/min over %vs", e.CallsPerMinute, e.ForSeconds)
		over := e.ForSeconds
		if over == 0 {
			over = 3600
		}
		e.Calls = impact.About(e.CallsPerMinute * over / 60)
		doc.Estimates = append(doc.Estimates, e)
	}
	vectors.Check(t, "degradation-matrix.json", doc)
}

func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
