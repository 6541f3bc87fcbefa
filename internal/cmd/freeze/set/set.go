// Package set implements `koshactl freeze`: freeze the fleet, so it
// honours no chaos header and no planned change starts, until the freeze
// ends or is lifted.
package set

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/fleetwait"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags.
type Options struct {
	Reason string
	Ref    string
	For    time.Duration
	Until  string
	levercmd.Flags
	fleetwait.Options
}

// long is the freeze's help (the group command is the set), built when the
// command is: a package-level heredoc would be paid by every koshactl
// process at init.
func long() string {
	return heredoc.Doc(`
	Freeze the whole fleet: write the fleet's freeze item (freeze#fleet) with its
	audit record in one transaction, and announce it. While it holds:

	  - the data plane ignores every chaos header (within its 5 s cache), and a header
	    minted before the freeze is never honoured again, even after the lift;
	  - chaos sign mints nothing, drill run starts no drill, a running drill stops at
	    its next guard poll and rolls back, apply opens no planned window (a window
	    already open still lapses at its end, and its clear goes ahead);
	  - incident levers (breaker force-open and clear, ratelimit) are NOT blocked: the
	    freeze is for faults and planned change, not for the people handling the incident.

	A reason is required; --ref names the incident (INC-123). The freeze ends after
	--for (default 1h, or the context's max-override when shorter) or at --until,
	within the context's max-override; a longer one is refused (exit 2).

	Setting a freeze never waits for an approval, whatever the table's policy says:
	a safety lever fails toward safety. Lifting it (koshactl freeze lift) is what the
	policy can hold for a second person.

	Two operators freezing at once both land, and both are recorded: the later one
	EXTENDS the freeze it finds. The item becomes the later operator's (actor, reason,
	reference), ending at the later of the two ends: a freeze never ends earlier
	because someone froze again; ending it early is a lift.

	--wait then waits until every instance's kosha_chaos_frozen gauge reports 1 (a
	Prometheus scrape: the context's, or --metrics-url), and names the instances that
	do not obey (exit 11). The store unreachable: exit 5, nothing written.
`)
}

// NewCmd builds the freeze command, to which the group adds status and
// lift.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "freeze --reason REASON [--ref INC-…] [--for D | --until T] [--wait]",
		Short: "Freeze the fleet: no chaos fault, no drill, no planned window until lifted",
		Long:  long(),
		Example: heredoc.Doc(`
			koshactl freeze --reason "payments failing, is it us?" --ref INC-123 --wait
			koshactl freeze --reason "provider outage" --for 30m
			koshactl freeze status
			koshactl freeze lift --reason "not us: the provider's outage"
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Check(c, opts.DryRun); err != nil {
				return err
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Reason, "reason", "r", "", "why (required; everyone the freeze stops reads it)")
	fl.StringVar(&opts.Ref, "ref", "", "the incident's reference, like INC-123 (letters, digits and - _ . : / #)")
	fl.Var(human.DurationFlag{D: &opts.For}, "for", "how long the freeze lasts (default 1h, at most the context's max-override)")
	fl.StringVar(&opts.Until, "until", "", "when the freeze ends (RFC3339, e.g. 2026-11-29T18:00:00Z)")
	cmd.MarkFlagsMutuallyExclusive("for", "until")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change; write nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a protected context")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	fleetwait.AddFlags(cmd, &opts.Options, "the freeze (1)")
	return cmd
}

// Result is the JSON output of freeze.
type Result struct {
	cmdenv.Envelope
	DryRun bool `json:"dry_run"`
	// Action is frozen, extended, would-freeze or would-extend.
	Action            string          `json:"action"`
	Freeze            freeze.View     `json:"freeze"`
	Before            *freeze.View    `json:"before"`
	KeptEnd           bool            `json:"kept_end,omitempty"`
	AuditID           string          `json:"audit_id,omitempty"`
	ConfirmedByReread bool            `json:"confirmed_by_reread,omitempty"`
	Convergence       *fleetwait.View `json:"convergence,omitempty"`
}

// Run freezes the fleet.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := freeze.CheckReason(opts.Reason); err != nil {
		return cmdutil.Usagef("--reason: %v", err)
	}
	if opts.Ref != "" {
		if err := freeze.ValidateRef(opts.Ref); err != nil {
			return cmdutil.Usagef("--ref: %v", err)
		}
	}
	p := freeze.SetParams{For: opts.For, Ref: opts.Ref}
	if opts.Until != "" {
		t, err := time.Parse(time.RFC3339, opts.Until)
		if err != nil {
			return cmdutil.Usagef("--until %q: not an RFC3339 instant: give one like 2026-11-29T18:00:00Z", opts.Until)
		}
		p.Until = t
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	reader, err := opts.Reader(ctx, env)
	if err != nil {
		return err
	}
	rep, err := levercmd.Change(ctx, f, env, freeze.Set(opts.Reason, p), opts.Flags)
	if rep.Outcomes == nil || rep.Pending != nil {
		return levercmd.Refused(ctx, f, env, rep, flagHint(err), opts.Flags)
	}
	o := rep.Outcomes[0]
	if !opts.DryRun && !o.Written {
		return o.Err
	}
	now := f.Clock.Now()
	r := freeze.ResultOf(o)
	out := Result{Envelope: env.Envelope("FreezeResult"), DryRun: opts.DryRun, Action: action(r, opts.DryRun), Freeze: r.After.View(now),
		KeptEnd: r.KeptEnd, AuditID: o.Record.ID, ConfirmedByReread: o.Confirmed}
	if r.Before != nil {
		v := r.Before.View(now)
		out.Before = &v
	}
	text := table(out, r, now, f.IOStreams.IsStdoutTTY())
	return opts.Finish(ctx, f, env, opts.Flags, reader, true, rep.Event, &out, &out.Convergence, text)
}

// flagHint words the kind's refusal of the duration for the flags.
func flagHint(err error) error {
	if errors.Is(err, freeze.ErrBadDuration) {
		return fmt.Errorf("--for/--until: %w", err)
	}
	return err
}

func action(r freeze.Result, dry bool) string {
	a := "frozen"
	if r.Extended {
		a = "extended"
	}
	if dry {
		return map[string]string{"frozen": "would-freeze", "extended": "would-extend"}[a]
	}
	return a
}

func table(out Result, r freeze.Result, now time.Time, tty bool) string {
	var w strings.Builder
	verb := map[string]string{"frozen": "Froze the fleet", "extended": "Froze the fleet, extending the freeze held",
		"would-freeze": "Would freeze the fleet", "would-extend": "Would freeze the fleet, extending the freeze held"}[out.Action]
	until := "until lifted"
	if !r.After.ExpiresAt.IsZero() {
		until = "until " + cmdutil.FormatTime(r.After.ExpiresAt, now, tty)
	}
	ref := ""
	if r.After.Ref != "" {
		ref = " (" + textsafe.Line(r.After.Ref) + ")"
	}
	fmt.Fprintf(&w, "%s%s %s — reason: %s\n", verb, ref, until, textsafe.Line(r.After.Reason))
	levercmd.Confirmed(&w, out.ConfirmedByReread)
	if r.Extended && r.Before != nil {
		fmt.Fprintf(&w, "  it was frozen by %s", textsafe.Line(r.Before.Actor))
		if r.Before.Ref != "" {
			fmt.Fprintf(&w, " (%s)", textsafe.Line(r.Before.Ref))
		}
		if r.KeptEnd {
			w.WriteString(", ending later: its end is kept (a freeze never ends earlier because someone froze again)")
		}
		w.WriteString("\n")
	}
	if out.DryRun {
		return w.String()
	}
	w.WriteString("No chaos header is honoured, no drill starts and no planned window opens until it ends; lift it with: koshactl freeze lift --reason REASON\n")
	return w.String()
}
