// Package whoami implements `koshactl whoami`: who koshactl acts as on the
// selected context, how it knows, the roles the table's policy sees, and
// the context and store.
package whoami

import (
	"context"
	"fmt"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// Options are the parsed flags.
type Options struct {
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show who koshactl acts as: the identity, how it was established, its roles, the context and store",
		Long: heredoc.Doc(`
			Show the identity every record of this context would name, and how koshactl
			knows it: verified by STS (the caller ARN GetCallerIdentity answers for the
			credentials in use), asserted by the environment ($KOSHACTL_ACTOR, else
			user@host: unverified, it cannot approve a change request), or a local
			context's demo identity ($KOSHACTL_DEMO_USER: a demonstration of four eyes,
			not a security boundary). The roles are those the table's change policy
			matches with principal in Kosha::Role::"ROLE" (an assumed role's name; none
			for an IAM user or an unverified identity).

			Nothing is written. On AWS a failing STS is an error (exit 5 or 6), as for
			every command.
		`),
		Example: heredoc.Doc(`
			koshactl whoami
			koshactl --context prod whoami -o json
			KOSHACTL_DEMO_USER=bob koshactl whoami
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output.
type Result struct {
	cmdenv.Envelope
	// Actor is who the records name: a caller ARN, or an asserted name.
	Actor string `json:"actor"`
	// Source is how koshactl knows (the records' actor_source): sts,
	// unverified or demo.
	Source audit.ActorSource `json:"source"`
	// Verified: the identity can approve change requests.
	Verified bool `json:"verified"`
	// UserID is the unique id its proofs are keyed by (verified only).
	UserID string `json:"user_id,omitempty"`
	// Account is the account of an ARN.
	Account string `json:"account,omitempty"`
	// Roles are the roles the table's policy sees.
	Roles []string `json:"roles"`
	// ContextSource says where the context's name came from.
	ContextSource cmdenv.ContextSource `json:"context_source"`
	// Note says what the identity can and cannot do, in a sentence.
	Note string `json:"note"`
}

// Run shows the identity.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	id, err := env.CallerIdentity(ctx)
	if err != nil {
		return err
	}
	file, err := f.Config()
	if err != nil {
		return err
	}
	_, src := f.SelectContext(file)
	actor := policy.Actor{ARN: id.Actor, Verified: id.Verified()}
	out := Result{Envelope: env.Envelope("Identity"), Actor: id.Actor, Source: id.Source, Verified: id.Verified(), UserID: id.UserID,
		Account: actor.Account(), Roles: append([]string{}, actor.Roles()...), ContextSource: src, Note: note(env, id)}
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, out)
	}
	roles := "none"
	if len(out.Roles) > 0 {
		roles = strings.Join(out.Roles, ", ")
	}
	fields := []cmdutil.Field{
		{Label: "Identity", Value: id.Actor},
		{Label: "Verified", Value: verified(id)},
		{Label: "Roles", Value: roles + " (as the table's policy sees them)"},
	}
	if id.UserID != "" {
		fields = append(fields, cmdutil.Field{Label: "Unique id", Value: id.UserID})
	}
	fields = append(fields,
		cmdutil.Field{Label: "Context", Value: env.Name + " (" + src.Describe(file) + ")"},
		cmdutil.Field{Label: "Store", Value: env.Store.Describe()},
		cmdutil.Field{Label: "Note", Value: out.Note},
	)
	cmdutil.PrintFields(ios.Out, fields...)
	return nil
}

// verified says how koshactl knows id.
func verified(id audit.Identity) string {
	switch id.Source {
	case audit.ActorSTS:
		return "yes, by STS (GetCallerIdentity)"
	case audit.ActorDemo:
		return "as a demo identity of the local context: a demonstration, not a security boundary"
	case audit.ActorUnverified:
	}
	return "no: asserted by the environment ($KOSHACTL_ACTOR, else user@host)"
}

// note says what id can do that matters for four eyes.
func note(env *cmdenv.Env, id audit.Identity) string {
	if u, ok := identity.DemoOf(id); ok {
		return fmt.Sprintf("%s: %s. Anyone who runs koshactl here may pick any demo identity with $%s; on the embedded store no IAM stands behind a role",
			u.Name, u.About, identity.DemoEnv)
	}
	if id.Verified() {
		return "may ask for changes and approve other people's, as the table's policy and the IAM role allow"
	}
	if env.Context.IsLocal() {
		return fmt.Sprintf("unverified: may ask for changes, never approve one; to try four eyes here act as a demo identity, e.g. %s=bob (docs/four-eyes-walkthrough.md)",
			identity.DemoEnv)
	}
	return "unverified: may ask for changes, never approve one; approve from a context whose credentials STS verifies"
}
