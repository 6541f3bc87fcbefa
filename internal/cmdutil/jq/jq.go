// Package jq runs the --jq expressions of koshactl's output (gojq): the
// cmdutil.JQ the full program links. koshactl's front does not link it (gojq
// builds its builtin tables at package initialisation, in every process that
// links it), and hands a run with --jq to the full program.
package jq

import (
	"encoding/json"
	"fmt"

	"github.com/itchyny/gojq"
)

// Compile compiles expr, or says why it does not parse or compile. $ENV and
// env are empty (the process environment may hold credentials), and input
// and inputs are not available. run runs it on a decoded JSON document
// (numbers as json.Number) and passes each result to yield, an error as a
// result of its own that ends the run.
func Compile(expr string) (run func(input any, yield func(any) bool), err error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("does not parse: %w", err)
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, err
	}
	return func(input any, yield func(any) bool) {
		it := code.Run(value(input))
		for {
			out, ok := it.Next()
			if !ok || !yield(out) {
				return
			}
			if _, isErr := out.(error); isErr {
				return
			}
		}
	}, nil
}

// value converts decoded JSON into the values gojq accepts: json.Number
// becomes an int when it is one, else a float64.
func value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = value(e)
		}
	case []any:
		for i, e := range x {
			x[i] = value(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
	}
	return v
}
