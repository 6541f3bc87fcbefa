// Package cmdutil holds what every koshactl command shares: the [Factory] of
// lazily built dependencies, the documented exit codes and the mapping from
// domain errors to them, output formats, and the protected-context guard.
package cmdutil
