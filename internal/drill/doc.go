// Package drill is the file model of koshactl's incident drills: the
// validating parser, templates and their sinks, the table of kinds a
// parser accepts, and the journal records. It imports no domain package.
// Three packages build on it: [runtime] holds the interfaces a kind's
// decoded spec implements and the run context kinds and the runner share,
// [kinds] holds the step, condition and lever kinds and their table
// (kinds.Builtin), [runner] runs a drill with its rollback stack and writes
// the reports (live log, JSON journal, JUnit XML), the plan and recovery.
// The import order is drill <- runtime <- kinds <- runner.
//
// [runtime]: github.com/kosha-platform/koshactl/internal/drill/runtime
// [kinds]: github.com/kosha-platform/koshactl/internal/drill/kinds
// [runner]: github.com/kosha-platform/koshactl/internal/drill/runner
//
// # Files
//
// A drill is a YAML document (docs/contracts/drill-file.md): a name, the
// context it targets, a steady-state hypothesis checked before and after,
// steps, stop conditions and explicit extra rollbacks. [Parse] decodes it
// node by node with go.yaml.in/yaml/v3, so every [Problem] carries a file,
// line and column: unknown keys, wrong types, unknown kinds, missing
// fields, bad durations, template references to steps or outputs that do
// not exist earlier, and timeouts that cannot fit inside each other.
//
// # Kinds
//
// Each step kind (breaker.force-open, ratelimit.drain, chaos.sign, http,
// wait-for, shell, ...) and each condition kind (http, breaker, bucket,
// shell, alarm) lives in its own file of package kinds and implements
// [StepKind] or [ConditionKind]. kinds.Builtin lists them in a [Registry],
// a plain table of a closed set ([Registry.Check] says what makes one
// unusable); no kind registers itself in init. Kinds decode their fields
// with the [Decoder] and [Map] API into a [Spec] the file holds, and act
// through runtime.RunContext. A step whose spec implements
// runtime.Mutating changes the system: the runner registers the
// rollback its Prepare returns before the step acts, and the plan shows
// the lever its Plan names.
//
// # Values
//
// Template references (${steps.ID.OUTPUT}, ${vars.NAME}, ${env.NAME},
// ${drill.FIELD}) resolve to data the drill read: HTTP answers, store
// items, the environment. Each templated field is a sink with one rule
// (sink.go): a shell command takes no references (values reach it as
// environment variables); a URL percent-encodes values in its path and
// query and lets no step output choose its host; a header value refuses
// control characters; a JSON body encodes each value as one JSON string.
//
// # Rollback
//
// The runner (runner.Runner.Run) keeps a stack of rollbacks. Each lever (an override, a
// bucket) gets one rollback, registered before the first step that moves
// it, restoring it to its state before the drill. Rollbacks run in reverse
// order on every exit path (success, failure, step or drill timeout, stop
// condition, cancellation), each on a fresh context with its own bounded
// timeout, so a canceled run context never skips them. Every override and
// chaos header a drill creates expires no later than the drill's deadline,
// so even a killed process converges.
package drill
