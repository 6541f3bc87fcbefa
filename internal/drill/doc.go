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
// The step and condition kinds are package kinds' ([StepKind],
// [ConditionKind]), listed in a [Registry], a plain table of a closed set:
// no kind registers itself in init. A kind decodes its fields with the
// [Decoder] and [Map] API into a [Spec] the file holds.
//
// # Values
//
// Template references (${steps.ID.OUTPUT}, ${vars.NAME}, ${env.NAME},
// ${drill.FIELD}) resolve to data the drill read. Each templated field is a
// sink with one rule (sink.go), so no value becomes code or structure.
//
// # Rollback
//
// Each lever gets one rollback, registered before the first step that
// moves it; rollbacks run in reverse order on every exit path, each on a
// fresh context with its own timeout (runner.Runner.Run). Every override
// and chaos header a drill creates expires by the drill's deadline, so even
// a killed process converges.
package drill
