// Package exitcode holds koshactl's documented exit codes
// (docs/exit-codes.md): their one declaration. It imports nothing, so the
// command layer (internal/cmd/root maps an error to its code; commands that
// choose a code name it here) and domain packages that report an exit code
// of their own (internal/drill's journal) use the same values without the
// domain importing the command layer.
package exitcode
