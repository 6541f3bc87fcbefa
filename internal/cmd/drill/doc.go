// Package drill wires the `koshactl drill` command group: run, validate and
// kinds. The engine (file model, parser, kinds, runner, reporters) is
// internal/drill; these packages parse flags, resolve the context and
// print.
package drill
