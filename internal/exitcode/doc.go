// Package exitcode holds koshactl's documented exit codes
// (docs/exit-codes.md) and the one rule that maps an error to its code
// ([Of]). Domain errors say what kind of failure they are ([Kind], [New]);
// the command layer (internal/cmd/root, where the process ends) and the
// drill journal ask [Of] for the code. It imports only the standard
// library, so any package can declare its errors' kinds.
package exitcode
