// Package list implements `koshactl request list`.
package list

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/request/requestview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags.
type Options struct {
	All     bool
	Reviews bool
	Output  string
	// Mine keeps the requests the caller asked for; WaitingOnMe the
	// pending ones the caller may approve.
	Mine, WaitingOnMe bool
	// Limit, when positive, is the most requests (or reviews) [Read]
	// returns, After where it resumes (a [Result.Next]); no flag sets them.
	Limit int
	After string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List pending change requests (--all: every one; --reviews: open break-glass reviews)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "list decided and expired requests too (and acknowledged reviews with --reviews)")
	cmd.Flags().BoolVar(&opts.Reviews, "reviews", false, "list break-glass reviews instead of requests")
	cmd.Flags().BoolVar(&opts.Mine, "mine", false, "only the requests you asked for (with --all: decided ones too)")
	cmd.Flags().BoolVar(&opts.WaitingOnMe, "waiting-on-me", false, "only the pending requests you may approve: asked by someone else, not approved by you yet, your approval permitted by the table's policy (needs a verified identity)")
	cmd.MarkFlagsMutuallyExclusive("mine", "waiting-on-me")
	cmd.MarkFlagsMutuallyExclusive("reviews", "mine")
	cmd.MarkFlagsMutuallyExclusive("reviews", "waiting-on-me")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// mineOnly says whether a request is one --mine or --waiting-on-me ask
// for, judged at now for the caller (its identity established once, and
// the table's policy read once for --waiting-on-me); nil when neither is
// set.
func mineOnly(ctx context.Context, env *cmdenv.Env, opts *Options) (func(r approval.Request, now time.Time) bool, error) {
	if !opts.Mine && !opts.WaitingOnMe {
		return nil, nil
	}
	id, err := env.CallerIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if opts.WaitingOnMe && !id.Verified() {
		return nil, exitcode.Errorf(exitcode.Auth, "--waiting-on-me: %s is not verified (context %q), and only a verified identity approves (on a local context, a demo identity: $KOSHACTL_DEMO_USER): list them all with koshactl request list",
			textsafe.Line(id.Actor), env.Name)
	}
	// Whether the policy would take the caller's approval is asked of the
	// table's policy as it is now, read once.
	var stored *policy.Stored
	if opts.WaitingOnMe {
		if stored, err = env.Policies().Load(ctx); err != nil {
			return nil, err
		}
	}
	svc := env.Approvals()
	return func(r approval.Request, now time.Time) bool {
		return opts.Mine && r.AskedBy(id) || opts.WaitingOnMe && svc.Awaits(r, stored, id, now)
	}, nil
}

// Result is the JSON output.
type Result struct {
	Kind       string             `json:"kind"`
	Requests   []requestview.View `json:"requests,omitempty"`
	Reviews    []approval.Review  `json:"reviews,omitempty"`
	Unreadable []store.Problem    `json:"unreadable,omitempty"`
	// Next is where a [Read] stopped at its Limit with more to list: the
	// cursor its After resumes from. `request list` prints none.
	Next string `json:"next_cursor,omitempty"`
}

// shown keeps of the listing l what opts lists at now: reviews or
// requests, and the closed ones only with --all.
func shown(l approval.Listing, opts *Options, now time.Time) approval.Listing {
	out := approval.Listing{Unreadable: l.Unreadable}
	if opts.Reviews {
		for _, r := range l.Reviews {
			if opts.All || r.Status == approval.ReviewOpen {
				out.Reviews = append(out.Reviews, r)
			}
		}
		return out
	}
	for _, r := range l.Requests {
		if opts.All || r.StatusAt(now) == approval.StatusPending {
			out.Requests = append(out.Requests, r)
		}
	}
	return out
}

// result is the listing l as -o json prints it at now.
func result(l approval.Listing, opts *Options, now time.Time) Result {
	l = shown(l, opts, now)
	out := Result{Kind: "ChangeRequestList", Unreadable: l.Unreadable}
	if opts.Reviews {
		out.Kind, out.Reviews = "ReviewList", slices.Concat([]approval.Review{}, l.Reviews)
		return out
	}
	out.Requests = []requestview.View{}
	for _, r := range l.Requests {
		out.Requests = append(out.Requests, requestview.Of(r, now))
	}
	return out
}

// pages reads what opts lists, handing each a page at a time, newest
// first: the open requests or reviews, and with --all the closed ones too,
// from the lists index (no scan), page by page. After, when set, resumes
// a listing there. Each page is as opts shows it ([shown]) at now, with
// what --mine or --waiting-on-me keep; with expire, its requests past
// their expiry are marked expired first ([requestview.Expire]).
func pages(ctx context.Context, f *cmdenv.Factory, opts *Options, expire bool, each func(l approval.Listing, now time.Time) error) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	mine, err := mineOnly(ctx, env, opts)
	if err != nil {
		return err
	}
	return env.Approvals().ListPages(ctx, approval.ListQuery{Reviews: opts.Reviews, All: opts.All, Before: opts.After}, func(l approval.Listing) error {
		if expire {
			l.Requests = requestview.Expire(ctx, env, f.IOStreams.ErrOut, l.Requests)
		}
		now := f.Clock.Now()
		if mine != nil {
			l.Requests = slices.DeleteFunc(l.Requests, func(r approval.Request) bool { return !mine(r, now) })
		}
		return each(shown(l, opts, now), now)
	})
}

// errEnough ends a [Read] that has its Limit and one more.
var errEnough = errors.New("enough")

// Read lists as -o json prints it, writing nothing: a pending request
// past its expiry reads as expired (and is left out unless opts.All) but
// is not marked so, as `request list` does. With opts.Limit it stops
// after that many requests (or reviews) and, when there are more, says
// where in Next (opts.After resumes there), holding no more than the
// limit and a page. The MCP server's pending_requests is this.
func Read(ctx context.Context, f *cmdenv.Factory, opts *Options) (Result, error) {
	var whole approval.Listing
	next := ""
	err := pages(ctx, f, opts, false, func(l approval.Listing, _ time.Time) error {
		whole.Unreadable = append(whole.Unreadable, l.Unreadable...)
		whole.Requests = append(whole.Requests, l.Requests...)
		whole.Reviews = append(whole.Reviews, l.Reviews...)
		if opts.Limit <= 0 {
			return nil
		}
		switch {
		case len(whole.Requests) > opts.Limit:
			whole.Requests, next = cut(whole.Requests, opts.Limit, func(r approval.Request) string { return r.Place })
			return errEnough
		case len(whole.Reviews) > opts.Limit:
			whole.Reviews, next = cut(whole.Reviews, opts.Limit, func(r approval.Review) string { return r.Place })
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return Result{}, err
	}
	sort.SliceStable(whole.Unreadable, func(i, j int) bool { return whole.Unreadable[i].PK < whole.Unreadable[j].PK })
	out := result(whole, opts, f.Clock.Now())
	out.Next = next
	return out, nil
}

// cut keeps the first limit of xs (more than limit, in the order the
// listing read them) and returns the cursor a listing resumed after them
// starts from: the place the last kept one was read at. A place that two
// items share (one written at another's place, flagged tampered) is not
// split, since a listing resumes after a place: they wait for the next
// answer together, unless they fill this one.
func cut[T any](xs []T, limit int, place func(T) string) ([]T, string) {
	n := limit
	for n > 0 && place(xs[n-1]) == place(xs[n]) {
		n--
	}
	if n == 0 {
		n = limit
	}
	return xs[:n], place(xs[n-1])
}

// Run lists, printing each page as it is read (a [printer]).
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	p := &printer{ios: f.IOStreams, opts: opts}
	err := pages(ctx, f, opts, true, func(l approval.Listing, now time.Time) error {
		return p.page(result(l, opts, now), now)
	})
	if err != nil {
		return err
	}
	return p.end()
}

// printer prints the listing page by page: -o json|yaml as the document
// [result] makes, its list written item by item (cmdutil.DocStream) once
// the first item comes (a listing with none prints the document whole, as
// it always did: its empty list is left out); a table's rows as they come
// (cmdutil.StreamTable). Under --jq the whole document is held and printed
// at the end. It holds what it has not printed (the table's first rows,
// the items under --jq), the items it could not read and the tampered
// ones' verifications.
type printer struct {
	ios  *iostreams.IOStreams
	opts *Options
	// kind and key name the document and its list.
	kind, key  string
	doc        *cmdutil.DocStream
	table      *cmdutil.StreamTable
	held       Result
	unreadable []store.Problem
	tampered   []approval.Verification
}

// page prints one page, out.
func (p *printer) page(out Result, now time.Time) error {
	p.kind = out.Kind
	p.unreadable = append(p.unreadable, out.Unreadable...)
	if p.opts.Reviews {
		p.key = "reviews"
		for _, r := range out.Reviews {
			if err := p.item(r, r.Verification, func(tty bool) []string {
				return []string{r.ID, requestview.Flagged(r.Status, r.Verification), r.Action, strings.Join(r.Targets, ","), r.Actor,
					cmdutil.FormatTime(r.CreatedAt, now, tty), r.Reason}
			}); err != nil {
				return err
			}
		}
		return nil
	}
	p.key = "requests"
	for _, r := range out.Requests {
		if err := p.item(r, r.Verification, func(tty bool) []string {
			return []string{r.ID, requestview.Flagged(r.Status, r.Verification), r.Summary, r.Requester, fmt.Sprintf("%d/%d", len(r.Approvers), r.Needed),
				cmdutil.FormatTime(r.ExpiresAt, now, tty)}
		}); err != nil {
			return err
		}
	}
	return nil
}

// header is the table's header.
func (p *printer) header() []string {
	if p.opts.Reviews {
		return []string{"REVIEW", "STATUS", "ACTION", "TARGETS", "ACTOR", "WHEN", "REASON"}
	}
	return []string{"REQUEST", "STATUS", "CHANGE", "REQUESTER", "APPROVALS", "EXPIRES"}
}

// emptyDoc is the document with its list empty (its keys sort as [Result]'s
// fields are ordered, so JSON and YAML print it as they print a Result).
func (p *printer) emptyDoc() map[string]any {
	d := map[string]any{"kind": p.kind, p.key: []any{}}
	if len(p.unreadable) > 0 {
		d["unreadable"] = p.sortedUnreadable()
	}
	return d
}

func (p *printer) sortedUnreadable() []store.Problem {
	sort.SliceStable(p.unreadable, func(i, j int) bool { return p.unreadable[i].PK < p.unreadable[j].PK })
	return p.unreadable
}

// item prints one request or review (v as the document holds it, ver its
// verification, cells its table row).
func (p *printer) item(v any, ver approval.Verification, cells func(tty bool) []string) error {
	if ver.Tampered != "" {
		p.tampered = append(p.tampered, ver)
	}
	switch {
	case p.opts.Output == cmdutil.FormatTable:
		if p.table == nil {
			p.table = cmdutil.NewStreamTable(p.ios.Out)
			if err := p.table.Header(p.ios, p.header()...); err != nil {
				return err
			}
		}
		return p.table.Row(cells(p.ios.IsStdoutTTY())...)
	case cmdutil.Streams(p.opts.Output):
		if p.doc == nil {
			d, err := cmdutil.NewDocStream(p.ios.Out, p.opts.Output, p.key, map[string]any{"kind": p.kind, p.key: []any{}})
			if err != nil {
				return err
			}
			p.doc = d
		}
		return p.doc.Item(v)
	}
	switch v := v.(type) {
	case requestview.View:
		p.held.Requests = append(p.held.Requests, v)
	case approval.Review:
		p.held.Reviews = append(p.held.Reviews, v)
	}
	return nil
}

// end prints the rest: the document's end (or, with no item, the whole
// document), the table's held rows or the line saying there are none, the
// unreadable items and the tampered ones; exit 10 when some could not be
// read.
func (p *printer) end() error {
	ios, opts := p.ios, p.opts
	switch {
	case p.doc != nil:
		if err := p.doc.End(p.emptyDoc()); err != nil {
			return err
		}
	case opts.Output != cmdutil.FormatTable:
		whole := p.held
		whole.Kind, whole.Unreadable = p.kind, p.sortedUnreadable()
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, whole); err != nil {
			return err
		}
	default:
		if p.table != nil {
			if err := p.table.Flush(); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(ios.ErrOut, p.none())
		}
		for _, u := range p.sortedUnreadable() {
			fmt.Fprintf(ios.ErrOut, "unreadable: %s: %s\n", textsafe.Quote(u.PK), textsafe.Line(u.Problem))
		}
	}
	if err := requestview.Tampered(ios.ErrOut, p.tampered...); err != nil {
		return err
	}
	if len(p.unreadable) > 0 {
		return exitcode.Wrap(exitcode.Partial, cmdutil.ErrSilent)
	}
	return nil
}

// none is the line a table prints instead of an empty listing.
func (p *printer) none() string {
	switch {
	case p.opts.Reviews:
		return "No open break-glass reviews."
	case p.opts.WaitingOnMe:
		return "No pending change requests wait on you."
	case p.opts.Mine && p.opts.All:
		return "No change requests of yours."
	case p.opts.Mine:
		return "No pending change requests of yours."
	}
	return "No pending change requests."
}
