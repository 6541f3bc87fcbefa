package cmdutil

import (
	"os"
	"strings"
)

// Environ is the environment a command reads, in os.Environ's form
// ("KEY=value" pairs; a later pair wins). The nil Environ is the process's.
//
// Everything koshactl itself reads from the environment goes through it:
// $KOSHACTL_CONFIG, $KOSHACTL_STATE_DIR, $XDG_STATE_HOME, $KOSHACTL_CONTEXT,
// $KOSHACTL_ACTOR and $USER, a context's chaos.key-env, ${env.NAME} and the
// shell steps of a drill. The AWS SDK reads its own variables (AWS_REGION,
// AWS_PROFILE, AWS_ENDPOINT_URL, ...) from the process environment, and so
// do the commands that fall back to them as the SDK would. In-process tests
// give each CLI its own Environ, so they can run in parallel.
type Environ func() []string

// List returns every pair.
func (e Environ) List() []string {
	if e == nil {
		return os.Environ()
	}
	return e()
}

// Lookup returns the value of name and whether it is set, as os.LookupEnv.
func (e Environ) Lookup(name string) (string, bool) {
	if e == nil {
		return os.LookupEnv(name)
	}
	list := e()
	for i := len(list) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(list[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Get returns the value of name, empty when unset, as os.Getenv.
func (e Environ) Get(name string) string {
	v, _ := e.Lookup(name)
	return v
}
