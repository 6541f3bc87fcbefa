package impact

import (
	"context"
	"slices"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/lever"
)

// Assessor tells a lever change's impact ([lever.Assessor]): the matrix's
// for the dependencies the change forces or clears, with the call rates of
// the source Open opens. The command factory wires one per context, so
// every lever surface (a dry run, a protected context's prompt, a change
// request, an agent's proposal, the records) carries the same report.
type Assessor struct {
	// Open opens the context's rate source; a nil source with a nil error
	// means none is named (the impact is the matrix's alone, without a
	// rates section). An error is a source that cannot be read: the impact
	// says why. Nil Open reads no rates.
	Open func(ctx context.Context) (RateSource, error)
}

var _ lever.Assessor = Assessor{}

// Assess implements [lever.Assessor]: [Of] of f's dependencies, over f's
// duration. It never fails and never takes longer than [DefaultTimeout]
// past opening the source.
func (a Assessor) Assess(ctx context.Context, f lever.Forces) lever.Impact {
	req := Request{Dependencies: f.Dependencies, For: f.For, Clear: f.Clear}
	if a.Open == nil {
		r := Static(req)
		return &r
	}
	src, err := a.Open(ctx)
	if err != nil {
		r := Static(req)
		r.RatesFailed("the context's metrics source", err)
		return &r
	}
	r := Of(ctx, req, src)
	return &r
}

var _ lever.Impact = (*Report)(nil)

// Record implements [lever.Impact]: dep's part of r, as the audit record
// of its force or clear keeps it (docs/contracts/audit-record.md, "The
// impact attribute"): the tools dep's row changes (when the fleet obeys
// its override) with their call rates, and dep's own. Nil for a
// dependency r does not name.
func (r *Report) Record(dep string) *audit.Impact {
	i := slices.IndexFunc(r.Dependencies, func(d Dependency) bool { return d.Dependency == dep })
	if i < 0 {
		return nil
	}
	d := r.Dependencies[i]
	out := &audit.Impact{Dependency: dep, Obeyed: d.Obeyed, Tools: []audit.ToolRate{}, CallsPerMinute: d.CallsPerMinute}
	if row, ok := Lookup(dep); ok && d.Obeyed {
		for _, e := range row.Effects {
			tr := audit.ToolRate{Tool: e.Tool, Behaviour: string(e.Behaviour)}
			if t := slices.IndexFunc(r.Tools, func(t ToolImpact) bool { return t.Tool == e.Tool }); t >= 0 {
				tr.CallsPerMinute = r.Tools[t].CallsPerMinute
			}
			out.Tools = append(out.Tools, tr)
		}
	}
	if rt := r.Rates; rt != nil {
		out.RatesSource, out.RatesError, out.ReadAt, out.WindowSeconds = rt.Source, rt.Error, rt.ReadAt, rt.WindowSeconds
	}
	return out
}
