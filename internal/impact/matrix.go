package impact

import (
	"fmt"
	"maps"
	"slices"
)

// Behaviour is what a tool does while a dependency is down.
type Behaviour string

// The behaviours, from harmless to worst ([Behaviour.Worse] orders them).
const (
	// Unaffected: the tool answers as usual.
	Unaffected Behaviour = "unaffected"
	// Degraded: the tool answers with less (full-text-only ranking), and
	// says so.
	Degraded Behaviour = "degraded"
	// Deferred: the tool gives no synchronous result; the request is
	// recorded for later and the client told when to retry.
	Deferred Behaviour = "deferred"
	// Failed: the tool answers an error.
	Failed Behaviour = "failed"
)

// Behaviours returns every behaviour, harmless first.
func Behaviours() []Behaviour { return []Behaviour{Unaffected, Degraded, Deferred, Failed} }

// rank orders behaviours; an unknown one ranks below every known one.
func (b Behaviour) rank() int { return slices.Index(Behaviours(), b) }

// Worse reports whether b is worse for a client than o: failed is worse
// than deferred, deferred than degraded, degraded than unaffected.
func (b Behaviour) Worse(o Behaviour) bool { return b.rank() > o.rank() }

// Valid reports whether b is one of the four behaviours.
func (b Behaviour) Valid() bool { return b.rank() >= 0 }

// The MCP tools of the design.
const (
	ToolSearchKnowledgeBase = "search_knowledge_base"
	ToolScreenEntity        = "screen_entity"
	ToolRaiseDispute        = "raise_dispute"
	ToolFlagTransaction     = "flag_transaction_for_review"
	ToolGetServiceHealth    = "get_service_health"
)

// The dependencies the matrix names, as breaker and chaos-target names
// (lowercase, a-z 0-9 -).
const (
	OpenAI       = "openai"
	ScreeningSim = "screening-sim"
	DynamoDB     = "dynamodb"
	SQS          = "sqs"
	Postgres     = "postgres"
	CoreAPI      = "core-api"
	CognitoJWKS  = "cognito-jwks"
)

// Tool is one of the design's tools and what one of its calls is called in
// an estimate ("750 screenings").
type Tool struct {
	Name string `json:"name"`
	// Noun is one call, singular ("screening"); human.Plural makes the
	// plural.
	Noun string `json:"noun"`
	// Data is true for the data tools: those that go through core-api
	// (and PostgreSQL behind it).
	Data bool `json:"data"`
}

var tools = []Tool{
	{Name: ToolSearchKnowledgeBase, Noun: "search query", Data: true},
	{Name: ToolScreenEntity, Noun: "screening"},
	{Name: ToolRaiseDispute, Noun: "dispute", Data: true},
	{Name: ToolFlagTransaction, Noun: "review flag", Data: true},
	{Name: ToolGetServiceHealth, Noun: "health check"},
}

// ToolNames returns the tools' names, in the order the LLD lists them.
func ToolNames() []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// Signal is what a client sees in a tool's answer: whether it is a tool
// error (MCP isError), fields of the structured answer with the exact
// values they hold, and fields that hold a positive number.
type Signal struct {
	// Error is true when the answer is a tool error.
	Error bool `json:"error"`
	// Fields are fields of the structured answer and their exact values
	// (strings and booleans).
	Fields map[string]any `json:"fields,omitempty"`
	// Positive are fields that hold a number above zero (retry_after_s).
	Positive []string `json:"positive,omitempty"`
	// Text says it as the LLD does: `status: "deferred"` with `retry_after_s`.
	Text string `json:"text"`
}

// none is the signal of an unaffected tool: an ordinary answer.
var none = Signal{Text: "none"}

// Effect is what a dependency being down does to one tool.
type Effect struct {
	Tool      string    `json:"tool"`
	Behaviour Behaviour `json:"behaviour"`
	// Detail is the behaviour in the LLD's words ("full-text-only ranking").
	Detail string `json:"detail"`
	Signal Signal `json:"signal"`
}

// Row is one dependency of the matrix.
type Row struct {
	Dependency string `json:"dependency"`
	// Title is the dependency as the LLD writes it ("OpenAI").
	Title string `json:"title"`
	// Breaker is true when the data plane has a circuit breaker on the
	// dependency (LLD §1), so an override breaker#<dependency> forces it;
	// false means no instance obeys such an override, and the row is what
	// happens when the dependency itself is down.
	Breaker bool `json:"breaker"`
	// Effects are the tools the row names, in [ToolNames] order; every other
	// tool is unaffected.
	Effects []Effect `json:"effects"`
	// Platform is what changes beyond the tools' answers ("" when
	// nothing), and PlatformSignal what tells it.
	Platform       string `json:"platform,omitempty"`
	PlatformSignal string `json:"platform_signal,omitempty"`
}

// Effect returns the row's effect on tool: the named one, or unaffected.
func (r Row) Effect(tool string) Effect {
	for _, e := range r.Effects {
		if e.Tool == tool {
			return e
		}
	}
	return Effect{Tool: tool, Behaviour: Unaffected, Signal: none}
}

// dataTools applies one effect to every data tool.
func dataTools(b Behaviour, detail string, s Signal) []Effect {
	var out []Effect
	for _, t := range tools {
		if t.Data {
			out = append(out, Effect{Tool: t.Name, Behaviour: b, Detail: detail, Signal: s})
		}
	}
	return out
}

// The signals the matrix names.
var (
	signalDegraded = Signal{Fields: map[string]any{"degraded": true, "degraded_reason": "embeddings_unavailable"},
		Text: `degraded: true, degraded_reason: "embeddings_unavailable"`}
	signalDeferred = Signal{Fields: map[string]any{"status": "deferred"}, Positive: []string{"retry_after_s"},
		Text: `status: "deferred" with retry_after_s`}
	signalUnavailable = Signal{Error: true, Fields: map[string]any{"error": "dependency_unavailable"}, Positive: []string{"retry_after_s"},
		Text: "error dependency_unavailable with retry_after_s"}
	signalCoreAPI = Signal{Error: true, Fields: map[string]any{"error": "dependency_unavailable", "dependency": CoreAPI},
		Text: `error dependency_unavailable with dependency: "core-api"`}
)

// matrix is LLD section 8, row for row, in its order.
var matrix = []Row{
	{Dependency: OpenAI, Title: "OpenAI", Breaker: true, Effects: []Effect{
		{Tool: ToolSearchKnowledgeBase, Behaviour: Degraded, Detail: "full-text-only ranking", Signal: signalDegraded},
	}},
	{Dependency: ScreeningSim, Title: "screening-sim", Breaker: true, Effects: []Effect{
		{Tool: ToolScreenEntity, Behaviour: Deferred, Detail: "no synchronous result; the request is recorded for later", Signal: signalDeferred},
	}},
	{Dependency: DynamoDB, Title: "DynamoDB", Effects: []Effect{},
		Platform:       "rate limiting fails open (every client admitted); breaker overrides get no new reads (each instance keeps the last it read)",
		PlatformSignal: "metric + alarm only"},
	{Dependency: SQS, Title: "SQS", Effects: []Effect{
		{Tool: ToolRaiseDispute, Behaviour: Unaffected, Detail: "events stay in ops.outbox until SQS recovers", Signal: none},
		{Tool: ToolFlagTransaction, Behaviour: Unaffected, Detail: "events stay in ops.outbox until SQS recovers", Signal: none},
	}},
	{Dependency: Postgres, Title: "PostgreSQL",
		Effects: dataTools(Failed, "dependency_unavailable once the breaker in front of it (core-api's) opens", signalUnavailable)},
	{Dependency: CoreAPI, Title: "core-api", Breaker: true, Effects: append(
		dataTools(Failed, "the breaker opens: every call fails fast", signalCoreAPI),
		Effect{Tool: ToolGetServiceHealth, Behaviour: Unaffected, Detail: "still answers, from the gateway's own state", Signal: none})},
	{Dependency: CognitoJWKS, Title: "Cognito JWKS", Effects: []Effect{},
		Platform:       "cached signing keys are used until they expire (10 min + grace); past that, calls fail authentication",
		PlatformSignal: "none while the cache is valid"},
}

// Matrix returns the degradation matrix, one row per dependency in the
// LLD's order. The rows are copies: changing them changes nothing here.
func Matrix() []Row {
	out := make([]Row, len(matrix))
	for i, r := range matrix {
		r.Effects = slices.Clone(r.Effects)
		out[i] = r
	}
	return out
}

// Lookup returns the matrix's row of dependency.
func Lookup(dependency string) (Row, bool) {
	for _, r := range Matrix() {
		if r.Dependency == dependency {
			return r, true
		}
	}
	return Row{}, false
}

// Classify is how a client reads a tool's answer: a tool error is failed;
// a structured answer with status "deferred" is deferred; one with
// degraded true is degraded; anything else is an ordinary answer
// (unaffected).
func Classify(isError bool, structured map[string]any) Behaviour {
	switch {
	case isError:
		return Failed
	case structured["status"] == "deferred":
		return Deferred
	case structured["degraded"] == true:
		return Degraded
	}
	return Unaffected
}

// Check reports whether an answer shows e: the behaviour [Classify] reads
// from it, and e's signal (the error flag, every field's exact value,
// every positive field above zero). The error says the first difference.
func (e Effect) Check(isError bool, structured map[string]any) error {
	if got := Classify(isError, structured); got != e.Behaviour {
		return fmt.Errorf("%s answered %s, the matrix says %s (%s)", e.Tool, got, e.Behaviour, e.Signal.Text)
	}
	if isError != e.Signal.Error {
		return fmt.Errorf("%s: isError %t, the matrix says %t", e.Tool, isError, e.Signal.Error)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Signal.Fields)) {
		if got, want := structured[k], e.Signal.Fields[k]; got != want {
			return fmt.Errorf("%s: %s is %v, the matrix says %v", e.Tool, k, got, want)
		}
	}
	for _, k := range e.Signal.Positive {
		if n, ok := structured[k].(float64); !ok || n <= 0 {
			return fmt.Errorf("%s: %s is %v, the matrix says a number above zero", e.Tool, k, structured[k])
		}
	}
	return nil
}
