// Package kinds holds the step, condition and lever kinds of a drill and
// their table, [Builtin]: a closed set. A kind that moves nothing is one
// file (kind_*.go steps, cond_*.go conditions; the http and shell step and
// condition share one spec, with its request or command, in kind_http.go
// and kind_shell.go). A lever is
// one file (lever_override.go, lever_bucket.go, lever_chaos.go): the kinds
// that move it, their plan, the rollback a run registers, its journal
// record and the rollback `drill recover` rebuilds from the journal and the
// run's audit trail ([RecoverRollback], recover.go). Kinds decode their fields through
// the file model's [drill.Decoder] and act through its [runtime.RunContext];
// an HTTP response's expectations (expect.go) and JSON paths are shared by
// the kinds that use them.
package kinds
