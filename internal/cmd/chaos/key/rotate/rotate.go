package rotate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/notify"
)

// AuditAction is the audit record action of a rotation.
const AuditAction = "chaos.key-rotate"

// Options are the parsed flags.
type Options struct {
	DryRun   bool
	Yes      bool
	Force    bool
	NoNotify bool
	Output   string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the chaos signing key; the replaced key keeps verifying",
		Long: heredoc.Doc(`
			Store a fresh 32-byte random key as the context's chaos signing key.

			With Secrets Manager (chaos.secret-id) the rotation is a compare-and-set: the
			new key is put under AWSPENDING only (with a ClientRequestToken, so a retried
			request cannot create two versions), then AWSCURRENT is moved to it from the
			version read at the start. If someone else rotated meanwhile, Secrets Manager
			refuses the move: the command exits 4 and changes nothing (its new version
			keeps no label). The version it replaces becomes AWSPREVIOUS and still
			verifies the headers it signed; the key that was AWSPREVIOUS is retired.

			koshactl keeps signing with AWSPREVIOUS until the context's
			chaos.propagation-delay (default 5m, the Lambda extension's cache TTL) has
			passed since the rotation, so data planes that cache the secret learn the new
			kid before any header carries it; the output says when the new key signs.

			A rotation is refused (exit 7) while AWSCURRENT is younger than the 16-minute
			header lifetime plus that delay: sooner, the key it retires could still sign
			live headers. --force rotates anyway. The local context keeps chaos.key and
			chaos.key.previous in its state directory with the same meaning and the same
			compare-and-set: a rotation that lost a race exits 4, nothing changed (no age
			guard: no fleet caches it). Key files and environment variables hold a single key and
			cannot be rotated.

			The rotation is audited (action chaos.key-rotate, kids only). On a protected
			context it needs typed confirmation, or --yes.
		`),
		Example: heredoc.Doc(`
			koshactl chaos key rotate --dry-run
			koshactl chaos key rotate --context prod --yes -o json
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change; write nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a protected context")
	fl.BoolVar(&opts.Force, "force", false, "rotate even though the current key is younger than the header lifetime plus propagation delay")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
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
	// SignsFrom is when the new key starts signing (after the propagation
	// delay); until then the previous key signs. Absent when it signs at
	// once, and in a dry run.
	SignsFrom *time.Time `json:"signs_from,omitempty"`
	// RefusedUntil, in a dry run, is when a rotation without --force stops
	// being refused because the current key is too young.
	RefusedUntil *time.Time `json:"refused_until,omitempty"`
	AuditID      string     `json:"audit_id,omitempty"`
}

// Run rotates the key (or, with --dry-run, says what rotating would do).
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	src, err := env.KeySource(ctx, "")
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
		res.RefusedUntil = refusedUntil(ctx, src, f.Clock.Now(), opts.Force)
		return printRotation(f, opts, env, res)
	}
	if err := cmdenv.ConfirmProtected(ctx, f, env, opts.Yes, "rotate the chaos signing key of "+src.Describe()); err != nil {
		return err
	}
	actor, err := env.Actor(ctx)
	if err != nil {
		return err
	}
	r, err := rot.Rotate(ctx, keys.RotateOptions{Force: opts.Force})
	if err != nil && r.Current.IsZero() {
		return err
	}
	cleanupErr := err // rotated, but a stray AWSPENDING label may be left
	// Report the state the rotation replaced as it read it (the version its
	// compare-and-set was conditioned on), not the earlier display read.
	if r.PreviousVersionID != "" || !r.Previous.IsZero() {
		res.Before = &KeyState{CurrentKID: r.Previous.KID(), PreviousKID: r.Retired.KID(), VersionID: r.PreviousVersionID}
		res.RetiredKID = r.Retired.KID()
	}
	res.After = &KeyState{CurrentKID: r.Current.KID(), VersionID: r.VersionID, PreviousKID: r.Previous.KID()}
	if !r.SignsFrom.IsZero() && r.SignsFrom.After(r.Created) {
		t := r.SignsFrom.UTC()
		res.SignsFrom = &t
	}
	var auditBefore any
	if res.Before != nil {
		auditBefore = res.Before
	}
	rec, auditErr := env.Audit().Append(ctx, audit.Entry{
		Actor: actor, Action: AuditAction, Subject: src.Subject, Before: auditBefore, After: res.After,
	})
	res.AuditID = rec.ID
	if err := printRotation(f, opts, env, res); err != nil {
		return err
	}
	cmdenv.Notify(ctx, env, opts.NoNotify, notify.Event{Action: AuditAction, Actor: actor,
		Levers: []notify.Lever{notify.KeyRotationLever(src.Subject, res.After.CurrentKID, res.After.PreviousKID, res.RetiredKID, res.SignsFrom, rec.ID)}})
	if auditErr != nil {
		return fmt.Errorf("the chaos key was rotated (kid %s is current) but %w", r.Current.KID(), auditErr)
	}
	return cleanupErr
}

// refusedUntil is when a rotation of src stops being refused as too soon,
// nil when it would not be (or cannot be told).
func refusedUntil(ctx context.Context, src *keys.Chosen, now time.Time, force bool) *time.Time {
	sm, ok := src.Source.(*keys.SecretsManager)
	if !ok || force {
		return nil
	}
	staged, err := sm.Keys(ctx)
	if err != nil || len(staged) == 0 || staged[0].Created.IsZero() {
		return nil
	}
	if at := staged[0].Created.Add(sm.MinRotationAge()).UTC(); now.Before(at) {
		return &at
	}
	return nil
}

// state reads the kids the source holds now; nil when it holds none yet.
// A real rotation goes ahead when they cannot all be read (rotating is how a
// broken current value is repaired, and a missing secret gets its own error
// from the rotation); a dry run reports the problem.
func state(ctx context.Context, src *keys.Chosen, dryRun bool) (*KeyState, error) {
	staged, err := src.Existing(ctx)
	switch {
	case errors.Is(err, keys.ErrNoKey):
		return nil, nil
	case err != nil && dryRun:
		return nil, err
	case err != nil, len(staged) == 0:
		return nil, nil
	}
	st := &KeyState{CurrentKID: staged[0].Key.KID(), VersionID: staged[0].VersionID}
	if len(staged) > 1 {
		st.PreviousKID = staged[1].Key.KID()
	}
	return st, nil
}

func printRotation(f *cmdenv.Factory, opts *Options, env *cmdenv.Env, res Result) error {
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, res)
	}
	b := res.Before
	if res.DryRun {
		if b == nil {
			fmt.Fprintf(ios.Out, "Would store the first chaos key in %s: it holds none yet\n", res.KeySource)
		} else {
			fmt.Fprintf(ios.Out, "Would rotate the chaos key of %s: a new random key would sign; kid %s would become AWSPREVIOUS and keep verifying its headers until they expire\n",
				res.KeySource, b.CurrentKID)
		}
		if res.RetiredKID != "" {
			fmt.Fprintf(ios.Out, "  kid %s would be retired: headers it signed would stop verifying\n", res.RetiredKID)
		}
		if res.RefusedUntil != nil {
			fmt.Fprintf(ios.Out, "  it would be refused until %s: the current key is younger than the header lifetime plus propagation delay (--force overrides)\n",
				res.RefusedUntil.Format(time.RFC3339))
		}
		fmt.Fprintf(ios.ErrOut, "dry run, nothing written; would act on %s\n", env.Describe())
		return nil
	}
	a := res.After
	version := ""
	if a.VersionID != "" {
		version = ", version " + a.VersionID
	}
	if res.SignsFrom != nil && a.PreviousKID != "" {
		fmt.Fprintf(ios.Out, "Rotated the chaos key of %s: kid %s is AWSCURRENT%s and signs from %s (after the propagation delay): data planes that refresh on an unknown kid accept it at once, caches with a TTL up to the delay by then\n",
			res.KeySource, a.CurrentKID, version, res.SignsFrom.Format(time.RFC3339))
		fmt.Fprintf(ios.Out, "  kid %s is AWSPREVIOUS: it keeps signing until then, and verifying the headers it signed until they expire\n", a.PreviousKID)
	} else {
		fmt.Fprintf(ios.Out, "Rotated the chaos key of %s: kid %s now signs (AWSCURRENT%s)\n", res.KeySource, a.CurrentKID, version)
		if a.PreviousKID != "" {
			fmt.Fprintf(ios.Out, "  kid %s is AWSPREVIOUS: it keeps verifying the headers it signed until they expire\n", a.PreviousKID)
		}
	}
	if res.RetiredKID != "" {
		fmt.Fprintf(ios.Out, "  kid %s was retired: headers it signed no longer verify\n", res.RetiredKID)
	}
	audited := ""
	if res.AuditID != "" {
		audited = "; audit record " + res.AuditID
	}
	fmt.Fprintf(ios.ErrOut, "acted on %s%s\n", env.Describe(), audited)
	return nil
}
