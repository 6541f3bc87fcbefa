// Package contextview is what the config commands that show contexts
// share: the selected context's view, how a context's store is described,
// and the lines on stderr that say why a context was selected or is
// refused.
package contextview

import (
	"fmt"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Current is the JSON view of the selected context and its source.
type Current struct {
	Kind string `json:"kind,omitempty"`
	Name string `json:"name"`
	// Source is flag, env, file or default (cmdenv.ContextSource).
	Source cmdenv.ContextSource `json:"source"`
	// FileCurrent is the config file's own current-context (local when it
	// sets none), which the flag or the variable overrides.
	FileCurrent string `json:"file_current_context"`
}

// CurrentOf is the view of the context name, selected by source from file.
func CurrentOf(file *config.File, name string, source cmdenv.ContextSource) Current {
	return Current{Name: name, Source: source, FileCurrent: file.Current()}
}

// PrintSelectedBy says on stderr, when --context or $KOSHACTL_CONTEXT chose
// the context, that it did and what the file's current-context is: an
// operator who reads "local" in the file must not act on prod unawares.
func PrintSelectedBy(f *cmdenv.Factory, file *config.File, name string, source cmdenv.ContextSource) {
	if source != cmdenv.ContextFromFlag && source != cmdenv.ContextFromEnv {
		return
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "context %q is selected by %s (the config file's current-context is %q)\n",
		name, source.Describe(file), file.Current())
}

// PrintInvalid says on stderr, for each context the file holds invalid,
// why it is refused and how to repair it.
func PrintInvalid(f *cmdenv.Factory, file *config.File) {
	for _, n := range file.Names() {
		if err := file.Invalid(n); err != nil {
			fmt.Fprintf(f.IOStreams.ErrOut, "warning: context %q is refused until repaired: %s\n", n, textsafe.Line(err.Error()))
		}
	}
}

// DescribeStore says where c keeps its items: a DynamoDB table (and its
// endpoint) or the embedded store's file.
func DescribeStore(environ cmdutil.Environ, c *config.Context) string {
	if d := c.Store.DynamoDB; d != nil {
		s := fmt.Sprintf("dynamodb %s (%s)", d.Table, d.Region)
		if ep := d.StoreEndpoint(); ep != "" {
			s += " at " + ep
		}
		return s
	}
	p, err := c.LocalStorePathFrom(environ.Get)
	if err != nil {
		return "embedded (state dir unknown)"
	}
	return "embedded " + p
}
