// Package exitcode holds koshactl's documented exit codes
// (docs/exit-codes.md) in one place. It imports nothing, so both the command
// layer (internal/cmdutil re-exports them) and domain packages that report
// an exit code of their own (internal/drill's journal) use the same values
// without the domain importing the command layer.
package exitcode
