// Package recovery implements `koshactl drill recover`: finish the rollbacks
// of a drill run whose process died, from its journal.
package recovery
