package cmdutil

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Factory holds a command's dependencies. Everything that touches the disk or
// the network is a function called on first use, so --help, version and
// completion never load config or credentials. The production wiring lives in
// internal/cmd/factory; tests build a Factory with fakes.
type Factory struct {
	IOStreams *iostreams.IOStreams
	Clock     clock.Clock
	Prompter  Prompter

	// ContextName is the global --context flag (or $KOSHACTL_CONTEXT); empty
	// means the config's current context.
	ContextName string

	// Config loads the config file (cached after the first call).
	Config func() (*config.File, error)
	// Env resolves the selected context into live dependencies.
	Env func(ctx context.Context) (*Env, error)
}

// Env is a resolved context: its settings and the clients built from them.
type Env struct {
	Name    string
	Context *config.Context
	Store   store.Store
	// Actor names who is acting, for audit: the AWS caller identity on AWS
	// contexts, user@host on local ones.
	Actor func(ctx context.Context) (string, error)
	// AWSConfig returns the context's AWS configuration (AWS contexts only;
	// local contexts return an error that says so).
	AWSConfig func(ctx context.Context) (aws.Config, error)
	// StateDir is where local state (embedded store, local chaos key) lives.
	StateDir string
}

// Describe says which context and store commands acted on.
func (e *Env) Describe() string {
	return fmt.Sprintf("context %q (%s)", e.Name, e.Store.Describe())
}

// PrintActedOn writes the line every mutating command ends with on stderr:
// which context and store it acted on, or would have on a dry run. It goes to
// stderr in every output mode, so -o json stays parseable.
func PrintActedOn(w io.Writer, env *Env, dryRun bool) {
	if dryRun {
		fmt.Fprintf(w, "dry run, nothing written; would act on %s\n", env.Describe())
		return
	}
	fmt.Fprintf(w, "acted on %s\n", env.Describe())
}
