// Package run implements `koshactl drill run`: run a drill file against a
// context, with a live log, an optional JSON journal and JUnit report, and
// rollback on every exit path, including SIGINT and SIGTERM.
package run
