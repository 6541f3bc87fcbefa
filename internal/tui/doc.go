// Package tui provides `koshactl dashboard`: a Bubble Tea program showing the
// fleet's breakers (overrides from the store merged with the breaker_state
// gauges) with the operator's levers, force-open and clear, under the keys.
//
// # Structure
//
// [Model] is the root model. It owns three sub-views, the dependency table,
// the detail of one dependency (a child model that scrolls its lines in its
// own viewport, as glow's pager) and the force/clear prompt, and takes its key
// bindings from package keys and every style from package styles. All I/O
// (store reads and writes, gauge fetches, audit reads) runs in tea.Cmd
// functions that return typed messages; Update and View never block. Time
// comes from an injected clock, and the store, the gauge source and the audit
// log are narrow interfaces ([Overrides], metrics.GaugeSource,
// [AuditLister]), so tests drive the program with fakes.
//
// # Refresh
//
// Every interval both sources are read again, unless the previous read is
// still running. A failing source keeps its last good data, marked stale
// under an error banner. A one-second tick redraws countdowns and ages; there
// is no other timer, so an idle dashboard costs one small redraw a second.
package tui
