//go:build !unix

package config

// lockPath is a no-op where flock(2) does not exist: Save's check that the
// file is still the one loaded (ErrChanged) is then the only guard.
func lockPath(string) (release func(), err error) { return func() {}, nil }
