// Package cmdutil holds what every koshactl command shares and no domain
// knows about: argument guards, prompts, output formats and tables, the
// environment commands read, and usage errors. It imports no domain
// package; the Factory and the resolved context live in internal/cmd/cmdenv.
package cmdutil
