// Package kinds holds the step, condition and lever kinds of a drill and
// their table, [Builtin]: a closed set, each kind in its own file
// (kind_*.go steps, cond_*.go conditions, lever_*.go the levers a mutating
// step moves and how each is put back, [RecoverRollback] rebuilding one
// for `drill recover` from the journal and the run's audit trail). Kinds decode their fields through the file model's
// [drill.Decoder] and act through its [drill.RunContext]; the HTTP
// request and expectation (httpreq.go, expect.go), JSON paths and the
// shell runner are shared by the kinds that use them.
package kinds
