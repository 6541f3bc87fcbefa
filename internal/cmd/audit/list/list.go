// Package list implements `koshactl audit list`, the audit records of the
// context's store, newest first.
package list

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/listing"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultFollowInterval is how often --follow reads new records.
const DefaultFollowInterval = 2 * time.Second

// Options are the parsed flags of audit list.
type Options struct {
	Since   time.Duration
	Until   string
	Subject string
	Action  string
	Actor   string
	Limit   int
	// Scan lists with a scan of the table instead of the indexes.
	Scan   bool
	Output string
	// Follow keeps printing new records until interrupted, every Interval.
	Follow   bool
	Interval time.Duration
	// After waits between --follow reads; nil means time.After (tests
	// feed ticks).
	After func(time.Duration) <-chan time.Time
	// Unapproved lists only the lever changes recorded since the table's
	// policy was set without an approval (policy.Unapproved), and exits 1
	// when there are any.
	Unapproved bool
	// Notify (with Unapproved) announces each such record to the context's
	// notification sinks: notify.ActionPolicyBypassed.
	Notify bool
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List audit records, newest first (kept 90 days)",
		Long: "List audit records, newest first. --follow prints the matching records, oldest first, then\n" +
			"each new one as it is written (like kubectl logs -f), until Ctrl-C, which exits 0; with -o json\n" +
			"every record is one compact JSON line.\n\n" +
			"A record that does not follow the audit contract (written by another tool) never hides the\n" +
			"others: each problem is named on stderr (or under \"unreadable\" in -o json|yaml) and the\n" +
			"rest is listed.\n\n" +
			"A subject is KIND#NAME (breaker#openai, rl#agent-1). A --subject without a kind is read as a\n" +
			"dependency's override (breaker#NAME), said on stderr; one that cannot be a dependency name,\n" +
			"or is a near miss of one the context knows, is refused with the suggestion (exit 2).\n\n" +
			"--unapproved lists only the lever changes recorded since the table's change policy was set that\n" +
			"carry no approval: made without asking the policy (another tool, an older koshactl, a direct\n" +
			"write; docs/contracts/policy.md). On a table without a policy nothing can be unapproved: it says\n" +
			"so on stderr and lists nothing. --notify announces each one to the context's notification sinks\n" +
			"(policy.bypassed, one per record; with --follow each once). Every 15 minutes, a job runs\n" +
			"koshactl audit list --unapproved --since 20m --notify (windows that overlap leave no gap when a\n" +
			"run starts late; a change in the overlap is announced twice).\n\n" +
			"Exit codes: 0 listed; 1 --unapproved listed one or more changes; 2 a flag is wrong; 7 the\n" +
			"table's policy item has no since; 10 listed, but some records could not be read in full.",
		Example: "  koshactl audit list --since 2h --subject breaker#openai\n  koshactl audit list --subject 'rl#*' -o json\n" +
			"  koshactl audit list --actor 'arn:aws:sts::123456789012:assumed-role/ops/*' --until 2026-11-30T12:00:00Z\n" +
			"  koshactl audit list --follow --action breaker.force-open\n" +
			"  koshactl audit list --unapproved --since 20m --notify",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Since < 0 {
				return cmdutil.Usagef("--since %s is negative: give how far back to look, like 2h", human.Duration(opts.Since))
			}
			if opts.Limit < 0 {
				return cmdutil.Usagef("--limit %d is negative: give a count, or 0 for all", opts.Limit)
			}
			if opts.Follow && opts.Until != "" {
				return cmdutil.Usagef("--until and --follow: a follow has no end; drop one")
			}
			if opts.Interval <= 0 {
				return cmdutil.Usagef("--interval %s: give a positive duration, like 2s", human.Duration(opts.Interval))
			}
			if _, err := listing.ParseUntil(opts.Until, time.Time{}); err != nil {
				return err
			}
			if opts.Notify && !opts.Unapproved {
				return cmdutil.Usagef("--notify announces the changes --unapproved finds: add --unapproved")
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.Var(human.DurationFlag{D: &opts.Since}, "since", "only records newer than this (e.g. 2h, 24h, 7d); default all retained")
	fl.StringVar(&opts.Subject, "subject", "", "only records about this subject (breaker#openai, rl#agent-1; a bare dependency name means its breaker#; a trailing * matches a prefix)")
	fl.StringVar(&opts.Until, "until", "", "only records before this time: RFC3339 (2026-11-30T12:00:00Z) or a duration ago (1h, 2d)")
	fl.StringVar(&opts.Action, "action", "", "only records of this action (e.g. breaker.force-open)")
	fl.StringVar(&opts.Actor, "actor", "", "only records by this actor (an ARN or user@host; a trailing * matches a prefix)")
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new records as they are written, until Ctrl-C")
	opts.Interval = DefaultFollowInterval
	fl.Var(human.DurationFlag{D: &opts.Interval}, "interval", "how often --follow reads new records")
	fl.BoolVar(&opts.Scan, "scan", false, "scan the whole table instead of the indexes: also finds records written without the index attributes or with an unreadable time (costs the table's size)")
	fl.IntVar(&opts.Limit, "limit", 50, "show at most this many records (0 for all)")
	fl.BoolVar(&opts.Unapproved, "unapproved", false, "only lever changes recorded since the table's policy was set without an approval; exit 1 when there are any")
	fl.BoolVar(&opts.Notify, "notify", false, "with --unapproved: announce each one to the context's notification sinks (policy.bypassed)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output of audit list.
type Result struct {
	cmdenv.Envelope
	Items []audit.Record `json:"items"`
	// Unreadable lists every attribute of a matching record that could not
	// be read (docs/contracts/cli-output.md).
	Unreadable []store.Problem `json:"unreadable"`
}

// ReadList lists the records once, as -o json prints them, with the
// problems of the records that could not be read in full (the MCP
// server's audit_list); with opts.Unapproved only the unapproved ones.
// opts.Follow is not its business.
func Read(ctx context.Context, f *cmdenv.Factory, opts *Options) (Result, []store.Problem, error) {
	env, err := f.Env(ctx)
	if err != nil {
		return Result{}, nil, err
	}
	rd, err := newReader(ctx, f, env, opts, f.Clock.Now())
	if err != nil {
		return Result{}, nil, err
	}
	recs := []audit.Record{}
	unreadable, err := rd.each(ctx, func(r audit.Record) error { recs = append(recs, r); return nil })
	if err != nil {
		return Result{}, nil, err
	}
	return Result{Envelope: env.Envelope("AuditRecordList"), Items: recs,
		Unreadable: listing.Problems(unreadable)}, unreadable, nil
}

// reader reads one listing's records, each flagged by the table's policy.
// With --unapproved the policy is read first, its since bounding the
// records read (on a table without one nothing is read); otherwise it is
// read beside the first page of records: one round trip for both.
type reader struct {
	log        *audit.Log
	q          audit.Query
	sch        *policy.Schema
	unapproved bool
	pol        chan policyRead
	polRead    bool
	// since is the table's policy's since once read (zero: it has none);
	// problem says how the policy disagrees with its policy.set proofs
	// (--unapproved; "" when it does not).
	since   time.Time
	problem string
}

type policyRead struct {
	since time.Time
	err   error
}

func newReader(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, opts *Options, now time.Time) (*reader, error) {
	q, err := query(f, env, opts, now)
	if err != nil {
		return nil, err
	}
	rd := &reader{log: audit.NewLog(env.Store, f.Clock, env.Name), q: q, sch: env.PolicySchema(),
		unapproved: opts.Unapproved, pol: make(chan policyRead, 1)}
	rd.log.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	if opts.Unapproved {
		if rd.since, rd.problem, err = unapprovedSince(ctx, f, env, false); err != nil {
			return nil, err
		}
		rd.polRead = true
		rd.q = onlyUnapproved(rd.sch, rd.q, &rd.since)
		return rd, nil
	}
	go func() {
		s, _, err := env.Policies().Since(ctx)
		rd.pol <- policyRead{s, err}
	}()
	return rd, nil
}

// awaitPolicy waits for the table's policy, once: the records are flagged
// by it.
func (rd *reader) awaitPolicy() error {
	if rd.polRead {
		return nil
	}
	rd.polRead = true
	p := <-rd.pol
	rd.since = p.since
	return p.err
}

// each calls add for every dated record in the log's order, flagged, and
// returns the problems of the records that could not be read in full,
// sorted by pk.
func (rd *reader) each(ctx context.Context, add func(audit.Record) error) ([]store.Problem, error) {
	var unreadable []store.Problem
	// --unapproved on a table without a policy reads nothing: no change
	// can be unapproved.
	if !rd.unapproved || !rd.since.IsZero() {
		for l, err := range rd.log.Read(ctx, rd.q) {
			if err != nil {
				return nil, err
			}
			if err := rd.awaitPolicy(); err != nil {
				return nil, err
			}
			unreadable = append(unreadable, l.Problems...)
			if !l.Dated {
				continue
			}
			r := l.Record
			r.Unapproved = rd.sch.Unapproved(r, rd.since)
			if err := add(r); err != nil {
				return nil, err
			}
		}
	}
	if err := rd.awaitPolicy(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(unreadable, func(a, b store.Problem) int { return strings.Compare(a.PK, b.PK) })
	return unreadable, nil
}

// query is the listing's question from its flags, at now: a bare
// dependency as --subject means its override (said on stderr).
func query(f *cmdenv.Factory, env *cmdenv.Env, opts *Options, now time.Time) (audit.Query, error) {
	subject, err := resolveSubject(opts.Subject, env.Context.KnownDependencies(), cmdutil.Notice(f.IOStreams.ErrOut))
	if err != nil {
		return audit.Query{}, err
	}
	q := audit.Query{Subject: subject, Action: opts.Action, Actor: opts.Actor, Limit: opts.Limit, Scan: opts.Scan}
	if opts.Since > 0 {
		q.Since = now.Add(-opts.Since)
	}
	if q.Until, err = listing.ParseUntil(opts.Until, now); err != nil {
		return q, err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return q, cmdutil.Usagef("--until %s is before --since %s: nothing can match", opts.Until, human.Duration(opts.Since))
	}
	return q, nil
}

// RunList lists the records, printing each as it is read.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	var ann *announcer
	if opts.Notify {
		if ann, err = newAnnouncer(ctx, env); err != nil {
			return err
		}
	}
	if opts.Follow {
		return follow(ctx, f, env, opts, ann)
	}
	return printList(ctx, f, env, opts, ann)
}

// printList prints the records as the log yields them, each flagged by the
// table's policy, which is read beside the first page of records (one
// round trip for both); with --unapproved the policy is read first, its
// since bounding the records read. The unapproved records are announced
// (--notify) oldest first once the listing is printed.
func printList(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, opts *Options, ann *announcer) error {
	now := f.Clock.Now()
	rd, err := newReader(ctx, f, env, opts, now)
	if err != nil {
		return err
	}
	ios := f.IOStreams
	tty := ios.IsStdoutTTY()
	none := "No audit records match."
	if opts.Unapproved {
		none = "No unapproved lever changes."
	}
	doc := Result{Envelope: env.Envelope("AuditRecordList"), Items: []audit.Record{}, Unreadable: []store.Problem{}}
	out, err := listing.NewStream(ios, listing.Spec[audit.Record]{Format: opts.Output, Doc: doc, Key: "items",
		View: func(r audit.Record) any { return r }, Header: tableHeaders, Row: func(r audit.Record) []string { return row(r, now, tty) },
		None: none, Noun: "audit record", Fix: listing.AuditRecordFix})
	if err != nil {
		return err
	}
	var flagged []audit.Record
	unreadable, err := rd.each(ctx, func(r audit.Record) error {
		if r.Unapproved && opts.Unapproved {
			flagged = append(flagged, r)
		}
		return out.Add(r)
	})
	if err != nil {
		return err
	}
	doc.Unreadable = listing.Problems(unreadable)
	err = out.End(doc, "", unreadable)
	if !opts.Unapproved || (err != nil && exitcode.Of(err) != exitcode.Partial) {
		return err
	}
	// Oldest first: the channel reads them in the order they were made.
	for i := len(flagged) - 1; i >= 0; i-- {
		ann.announce(ctx, flagged[i], rd.since)
	}
	return foundUnapproved(len(flagged), rd.since, err, rd.problem)
}

var tableHeaders = []string{"TIME", "ACTOR", "ACTION", "SUBJECT", "OUTCOME", "REASON"}

// row is a record's cells in the table.
func row(r audit.Record, now time.Time, tty bool) []string {
	actor := r.Actor
	if r.ActorSource == audit.ActorUnverified {
		actor += " (unverified)"
	}
	if r.DataPlane {
		// The data plane's role writes these alone: its word, never an
		// operator's lever change.
		actor += " (data plane)"
	}
	outcome := r.Outcome
	switch {
	case r.Unapproved:
		outcome += " UNAPPROVED"
	case r.Approval.BreakGlass():
		outcome += " BREAK-GLASS"
	case r.Approval != nil && r.Approval.Decision == audit.DecisionApproved:
		outcome += " (approved)"
	}
	return []string{cmdutil.FormatTime(r.Time, now, tty), actor, r.Action, r.Subject, outcome, r.Reason}
}

// flagUnapproved marks the lever changes (sch's actions) recorded since
// the table's policy was set (since) that carry no approval
// ([policy.Schema.Unapproved]). A table without a policy (since zero) flags
// nothing.
func flagUnapproved(sch *policy.Schema, since time.Time, recs []audit.Record) {
	for i := range recs {
		recs[i].Unapproved = sch.Unapproved(recs[i], since)
	}
}

// follow prints the records as they are written, until ctx ends (exit 0;
// with --unapproved, exit 1 when it listed any). A store that is
// unreachable for a while is retried, said on stderr. The table's policy is
// read again before each read of the records, which it flags.
func follow(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, opts *Options, ann *announcer) error {
	ios := f.IOStreams
	after := opts.After
	if after == nil {
		after = time.After
	}
	q, err := query(f, env, opts, f.Clock.Now())
	if err != nil {
		return err
	}
	var since time.Time
	problem := ""
	if opts.Unapproved {
		if since, problem, err = unapprovedSince(ctx, f, env, true); err != nil {
			return err
		}
		if since.IsZero() && q.Since.Before(f.Clock.Now()) {
			// No policy yet: one set later has a later since, so nothing
			// written before now can be flagged; the follow waits for it.
			q.Since = f.Clock.Now()
		}
		q = onlyUnapproved(env.PolicySchema(), q, &since)
	} else if since, _, err = readPolicySince(ctx, env, false); err != nil {
		return err
	}
	log := audit.NewLog(env.Store, f.Clock, env.Name)
	log.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	fl := log.Follow(q)
	headers := opts.Output == cmdutil.FormatTable && !ios.NoHeaders()
	// Unreadable records are warned about on stderr as they are met (stdout
	// is the stream of records, in every format), and make the follow end
	// as a listing that met them does: exit 10, with the count.
	var unreadable []store.Problem
	flagged := 0
	done := func() error {
		partial := listing.PartialListing(unreadable, "audit record", "warned about on stderr", listing.AuditRecordFix)
		if !opts.Unapproved {
			return partial
		}
		return foundUnapproved(flagged, since, partial, problem)
	}
	for first := true; ; first = false {
		var l audit.Listing
		var err error
		if !first { // the policy was read just before the first poll
			var s time.Time
			if s, _, err = readPolicySince(ctx, env, opts.Unapproved); err == nil {
				since = s
			}
		}
		if err == nil {
			l, err = fl.Poll(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return done()
		case errors.Is(err, store.ErrUnavailable):
			fmt.Fprintf(ios.ErrOut, "audit list --follow: %v (retrying every %s)\n", err, human.Duration(opts.Interval))
		case err != nil:
			return err
		default:
			for _, p := range l.Unreadable {
				fmt.Fprintf(ios.ErrOut, "warning: %s\n", textsafe.Line(p.Error()))
			}
			unreadable = append(unreadable, l.Unreadable...)
			flagUnapproved(env.PolicySchema(), since, l.Records)
			if err := printFollowed(ios, opts.Output, l.Records, f.Clock.Now(), &headers); err != nil {
				return err
			}
			for _, r := range l.Records {
				if r.Unapproved && opts.Unapproved {
					flagged++
					ann.announce(ctx, r, since)
				}
			}
		}
		select {
		case <-ctx.Done():
			return done() // Ctrl-C ends a follow normally
		case <-after(opts.Interval):
		}
	}
}

// printFollowed writes one batch: table rows (the header before the first
// batch), one compact JSON document a line, jq results, or YAML documents.
func printFollowed(ios *iostreams.IOStreams, format string, recs []audit.Record, now time.Time, headers *bool) error {
	switch {
	case format == cmdutil.FormatJSON:
		for _, r := range recs {
			if err := cmdutil.PrintJSONLine(ios.Out, r); err != nil {
				return err
			}
		}
		return nil
	case format != cmdutil.FormatTable:
		for _, r := range recs {
			if format == cmdutil.FormatYAML {
				fmt.Fprintln(ios.Out, "---")
			}
			if err := cmdutil.PrintStructured(ios.Out, format, r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 && !*headers {
		return nil
	}
	tw := cmdutil.NewTable(ios.Out)
	if *headers {
		tw.Header(ios, tableHeaders...)
		*headers = false
	}
	for _, r := range recs {
		tw.Row(row(r, now, ios.IsStdoutTTY())...)
	}
	return tw.Flush()
}
