package rotate

import (
	"context"
	"errors"
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/cmd/chaos/shared"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// AuditAction is the audit record action of a rotation.
const AuditAction = "chaos.key-rotate"

// Options are the parsed flags.
type Options struct {
	DryRun bool
	Yes    bool
	Output string
}

// NewCmd builds the command. runF, when non-nil, replaces the run function
// (tests use it to capture parsed options).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the chaos signing key; the replaced key keeps verifying",
		Long: heredoc.Doc(`
			Store a fresh 32-byte random key as the context's chaos signing key.

			With Secrets Manager (chaos.secret-id) this is PutSecretValue with a
			ClientRequestToken (a retried request cannot create two versions): the new
			version becomes AWSCURRENT and the one it replaces AWSPREVIOUS, which still
			verifies the headers it signed until they expire. The key that was AWSPREVIOUS
			is retired: headers it signed stop verifying. The local context keeps
			chaos.key and chaos.key.previous in its state directory with the same meaning.
			Key files and environment variables hold a single key and cannot be rotated.

			Headers live at most 15 minutes, so rotating at most once every 16 minutes
			never breaks a header in flight. Data planes that cache keys pick the new key
			up when they meet its kid.

			The rotation is audited (action chaos.key-rotate, kids only). On a protected
			context it needs typed confirmation, or --yes.
		`),
		Example: heredoc.Doc(`
			koshactl chaos key rotate --dry-run
			koshactl chaos key rotate --context prod --yes -o json
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change; write nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a protected context")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// KeyState names a source's keys by id, for output and audit records.
type KeyState struct {
	CurrentKID  string `json:"current_kid,omitempty"`
	PreviousKID string `json:"previous_kid,omitempty"`
	// VersionID is the Secrets Manager version of the current key.
	VersionID string `json:"version_id,omitempty"`
}

// Result is the JSON (and YAML) output of key rotate.
type Result struct {
	Kind      string `json:"kind"`
	Context   string `json:"context"`
	KeySource string `json:"key_source"`
	DryRun    bool   `json:"dry_run"`
	// Before is nil when the source held no key yet.
	Before *KeyState `json:"before"`
	// After is nil in a dry run.
	After *KeyState `json:"after"`
	// RetiredKID is the key the rotation drops (or would drop): headers it
	// signed no longer verify.
	RetiredKID string `json:"retired_kid,omitempty"`
	AuditID    string `json:"audit_id,omitempty"`
}

// Run rotates the key (or, with --dry-run, says what rotating would do).
func Run(ctx context.Context, f *cmdutil.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	src, err := shared.ResolveKeySource(ctx, env, "")
	if err != nil {
		return err
	}
	rot, ok := src.Source.(keys.Rotator)
	if !ok {
		return fmt.Errorf("rotate chaos key: %w: %s (from %s) holds a single key; replace it by hand, or configure chaos.secret-id",
			keys.ErrNotRotatable, src.Describe(), src.Origin)
	}
	before, err := state(ctx, src, opts.DryRun)
	if err != nil {
		return err
	}
	res := Result{Kind: "ChaosKeyRotation", Context: env.Name, KeySource: src.Describe(), DryRun: opts.DryRun, Before: before}
	if before != nil {
		res.RetiredKID = before.PreviousKID
	}
	if opts.DryRun {
		return print(f, opts, env, res)
	}
	if err := cmdutil.ConfirmProtected(f, env, opts.Yes, "rotate the chaos signing key of "+src.Describe()); err != nil {
		return err
	}
	actor, err := env.Actor(ctx)
	if err != nil {
		return err
	}
	r, err := rot.Rotate(ctx)
	if err != nil {
		return err
	}
	res.After = &KeyState{CurrentKID: r.Current.KID(), VersionID: r.VersionID}
	if !r.Previous.IsZero() {
		res.After.PreviousKID = r.Previous.KID()
	}
	var auditBefore any
	if before != nil {
		auditBefore = before
	}
	rec, auditErr := env.AuditLog(f.Clock).Append(ctx, audit.Entry{
		Actor: actor, Action: AuditAction, Subject: src.Subject, Before: auditBefore, After: res.After,
	})
	res.AuditID = rec.ID
	if err := print(f, opts, env, res); err != nil {
		return err
	}
	if auditErr != nil {
		return fmt.Errorf("the chaos key was rotated (kid %s now signs) but %w", r.Current.KID(), auditErr)
	}
	return nil
}

// state reads the kids the source holds now; nil when it holds none yet.
// A real rotation goes ahead when they cannot all be read (rotating is how a
// broken current value is repaired, and a missing secret gets its own error
// from the rotation); a dry run reports the problem.
func state(ctx context.Context, src *shared.KeySource, dryRun bool) (*KeyState, error) {
	staged, err := src.Existing(ctx)
	switch {
	case errors.Is(err, keys.ErrNoKey):
		return nil, nil
	case err != nil && dryRun:
		return nil, err
	case err != nil:
		return nil, nil
	}
	if len(staged) == 0 {
		return nil, nil
	}
	st := &KeyState{CurrentKID: staged[0].Key.KID(), VersionID: staged[0].VersionID}
	if len(staged) > 1 {
		st.PreviousKID = staged[1].Key.KID()
	}
	return st, nil
}

func print(f *cmdutil.Factory, opts *Options, env *cmdutil.Env, res Result) error {
	io := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(io.Out, opts.Output, res)
	}
	b := res.Before
	if res.DryRun {
		if b == nil {
			fmt.Fprintf(io.Out, "Would store the first chaos key in %s: it holds none yet\n", res.KeySource)
		} else {
			fmt.Fprintf(io.Out, "Would rotate the chaos key of %s: a new random key would sign; kid %s would become AWSPREVIOUS and keep verifying its headers until they expire\n",
				res.KeySource, b.CurrentKID)
		}
		if res.RetiredKID != "" {
			fmt.Fprintf(io.Out, "  kid %s would be retired: headers it signed would stop verifying\n", res.RetiredKID)
		}
		fmt.Fprintf(io.ErrOut, "dry run, nothing written; would act on %s\n", env.Describe())
		return nil
	}
	a := res.After
	version := ""
	if a.VersionID != "" {
		version = ", version " + a.VersionID
	}
	fmt.Fprintf(io.Out, "Rotated the chaos key of %s: kid %s now signs (AWSCURRENT%s)\n", res.KeySource, a.CurrentKID, version)
	if a.PreviousKID != "" {
		fmt.Fprintf(io.Out, "  kid %s is AWSPREVIOUS: it keeps verifying the headers it signed until they expire\n", a.PreviousKID)
	}
	if res.RetiredKID != "" {
		fmt.Fprintf(io.Out, "  kid %s was retired: headers it signed no longer verify\n", res.RetiredKID)
	}
	audited := ""
	if res.AuditID != "" {
		audited = "; audit record " + res.AuditID
	}
	fmt.Fprintf(io.ErrOut, "acted on %s%s\n", env.Describe(), audited)
	return nil
}
