// Package bake watches the fleet after a clear for a bake period, and puts
// the override back when the clear did not hold: the breaker re-opened on
// most instances (a configurable share), or a CloudWatch alarm went to
// ALARM or INSUFFICIENT_DATA, as AWS AppConfig rolls a deployment back.
//
// [Watch.Run] reads the gauges (and the alarms) once a poll and returns a
// [Result]; [Rollback] puts back what the result tripped through the lever
// service under the table's policy ([breaker.PutBack], asked as
// breaker.rollback); [Err] is the error, and so the exit code, the bake
// ends with. A source that cannot be read ends the bake as lost, and
// nothing is put back on no evidence (docs/bake.md).
package bake
