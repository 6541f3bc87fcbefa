// Package runtime is what a drill's kinds and its runner share while a
// drill runs: the interfaces a kind's decoded spec implements ([Action],
// [Mutating], [Rollback], [Condition]), the [RunContext] (outputs,
// variables, secrets, levers, the clock and the deadline), the [Deps]
// steps act on, polling with guards and their grace, and the batched
// alarm reads. It sits between the file model and the kinds: drill <-
// runtime <- kinds <- runner. Package drill holds the parsed file and
// imports no domain package; this one imports the domain packages the
// kinds act through.
package runtime
