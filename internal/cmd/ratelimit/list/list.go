package list

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/listing"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/bucketview"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/clientargs"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Scan defaults.
const (
	// MaxSegments bounds --segments.
	MaxSegments = 64
	// ProgressAfterItems and ProgressAfter say when a scan counts as long
	// enough to show progress (on a terminal only).
	ProgressAfterItems = 5000
	ProgressAfter      = time.Second
	// DefaultMaxReadUnits caps a scan's read rate (read capacity units per
	// second): a few percent of a modest provisioned table, and a 100k-bucket
	// table (about 25 MB, some 6,000 units read consistently) still lists in
	// about 30 s.
	DefaultMaxReadUnits = 200
)

// Options are the parsed flags.
type Options struct {
	Throttled bool
	Limit     int
	Sort      string
	// Segments is the parallel scan width; 0 picks clientargs.DynamoSegments on
	// DynamoDB and 1 on the local store.
	Segments int
	// MaxReadUnits caps the scan's read capacity units per second.
	MaxReadUnits float64
	Output       string
	// ProgressAfterItems overrides the item count after which progress is
	// shown (tests); zero means ProgressAfterItems.
	ProgressAfterItems int
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	orders := make([]string, len(ratelimit.SortOrders))
	for i, o := range ratelimit.SortOrders {
		orders[i] = string(o)
	}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List clients' buckets (--throttled: only clients being limited now)",
		Long: heredoc.Doc(`
			List every rate-limit bucket in the context's store with its tokens refilled
			to now. --throttled keeps the clients whose next request would be refused.

			The whole table is scanned (items rl#*), page by page: which buckets are
			throttled depends on the time, so no index can answer it. On DynamoDB the
			scan runs in parallel segments, paced to --max-read-units so it does not
			compete with the data plane's reads. On a terminal a long scan shows its
			progress on stderr; every scan ends with a summary on stderr of the items
			examined and the read capacity consumed.

			An item under rl# that is not a valid bucket is skipped (the data plane
			fails open on it) and named on stderr, or under "unreadable" in
			-o json|yaml.

			Exit codes: 0 listed; 10 listed, but some items were skipped as malformed
			(replace one with koshactl ratelimit reset CLIENT).
		`),
		Example: heredoc.Doc(`
			koshactl ratelimit list --throttled
			koshactl ratelimit list --sort tokens --limit 20
			koshactl ratelimit list -o json | jq '.items[] | select(.tokens < 5) | .client'
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Throttled, "throttled", false, "only clients whose next request would be refused")
	fl.IntVar(&opts.Limit, "limit", 0, "show at most N buckets after sorting (0: all)")
	fl.StringVar(&opts.Sort, "sort", string(ratelimit.SortClient), "order: "+strings.Join(orders, "|")+" (tokens: emptiest first; updated: most recent first)")
	fl.IntVar(&opts.Segments, "segments", 0, fmt.Sprintf("parallel scan segments (default %d on DynamoDB, 1 on the local store)", clientargs.DynamoSegments))
	fl.Float64Var(&opts.MaxReadUnits, "max-read-units", DefaultMaxReadUnits, "cap the scan at this many read capacity units per second (DynamoDB)")
	_ = cmd.RegisterFlagCompletionFunc("sort", cobra.FixedCompletions(orders, cobra.ShellCompDirectiveNoFileComp))
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output of list.
type Result struct {
	cmdenv.Envelope
	Items []bucketview.BucketView `json:"items"`
	// Matched counts the buckets that matched before --limit.
	Matched int `json:"matched"`
	// Malformed lists items under rl# that are not valid buckets, as one
	// message each (kept for scripts; Unreadable has the same, structured).
	Malformed []string `json:"malformed"`
	// Unreadable names each skipped item: pk, attribute, problem
	// (docs/contracts/cli-output.md).
	Unreadable []store.Problem `json:"unreadable"`
}

func (o *Options) check() error {
	if o.Limit < 0 {
		return cmdutil.Usagef("--limit %d is negative: give a count, or 0 for all", o.Limit)
	}
	if o.MaxReadUnits <= 0 {
		return cmdutil.Usagef("--max-read-units %g is not positive: give a rate like %d", o.MaxReadUnits, DefaultMaxReadUnits)
	}
	if o.Segments < 0 || o.Segments > MaxSegments {
		return cmdutil.Usagef("--segments %d: give 1 to %d (or 0 for the default)", o.Segments, MaxSegments)
	}
	if !slices.Contains(ratelimit.SortOrders, ratelimit.SortBy(o.Sort)) {
		return cmdutil.Usagef("--sort %q: use client, tokens or updated", o.Sort)
	}
	return nil
}

// scan is one listing's setup: the context, its buckets, the scan.
type scan struct {
	env   *cmdenv.Env
	b     *ratelimit.Buckets
	q     ratelimit.ListQuery
	stats *store.ReadStats
	prog  *progress
}

// begin checks opts and sets the listing up. Progress shows on a terminal
// unless the buckets print as they are read (then the rows are the
// progress).
func begin(ctx context.Context, f *cmdenv.Factory, opts *Options, printing bool) (*scan, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return nil, err
	}
	b, err := clientargs.Buckets(env)
	if err != nil {
		return nil, err
	}
	l := &scan{env: env, b: b, stats: &store.ReadStats{}, prog: newProgress(f, opts.ProgressAfterItems)}
	l.q = ratelimit.ListQuery{Throttled: opts.Throttled, Sort: ratelimit.SortBy(opts.Sort), Limit: opts.Limit,
		Segments: clientargs.ScanSegments(env, opts.Segments), Rate: &store.ScanRate{UnitsPerSecond: opts.MaxReadUnits}, Stats: l.stats}
	if printing && b.InScanOrder(l.q) {
		l.prog.enabled = false
	}
	l.q.Progress = l.prog.report
	return l, nil
}

// result is the document of env's listing, its items empty.
func (l *scan) result() Result {
	return Result{Envelope: l.env.Envelope("RateLimitBucketList"), Items: []bucketview.BucketView{},
		Malformed: []string{}, Unreadable: []store.Problem{}}
}

// ended fills out's counts from what the scan met, and says on stderr
// what it examined.
func (l *scan) ended(f *cmdenv.Factory, opts *Options, out *Result, stats ratelimit.ListStats) {
	l.prog.done()
	fmt.Fprintln(f.IOStreams.ErrOut, ScanSummary(l.stats, opts.MaxReadUnits))
	out.Matched = stats.Matched
	for _, m := range stats.Malformed {
		out.Malformed = append(out.Malformed, m.Error())
		var p store.Problem
		if !errors.As(m, &p) {
			p = store.Problem{Attribute: "-", Problem: m.Error()}
		}
		out.Unreadable = append(out.Unreadable, p)
	}
}

// Read lists the buckets once, as -o json prints them (the MCP server's
// ratelimit_list), with the listing read and the context listed.
func Read(ctx context.Context, f *cmdenv.Factory, opts *Options) (Result, ratelimit.ListResult, *cmdenv.Env, error) {
	l, err := begin(ctx, f, opts, false)
	if err != nil {
		return Result{}, ratelimit.ListResult{}, nil, err
	}
	res, err := l.b.List(ctx, l.q)
	if err != nil {
		l.prog.done()
		return Result{}, ratelimit.ListResult{}, nil, err
	}
	out := l.result()
	for _, s := range res.Buckets {
		out.Items = append(out.Items, bucketview.View(s))
	}
	l.ended(f, opts, &out, ratelimit.ListStats{Matched: res.Matched, Malformed: res.Malformed})
	return out, res, l.env, nil
}

// Run lists the buckets, printing each as the listing passes it: as it is
// read in client order on the local store, after the scan otherwise (the
// order needs every bucket; --limit holds only that many).
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	l, err := begin(ctx, f, opts, true)
	if err != nil {
		return err
	}
	ios := f.IOStreams
	env := l.env
	none := fmt.Sprintf("No rate-limit buckets in context %q: every client has a full bucket.", env.Name)
	if opts.Throttled {
		none = fmt.Sprintf("No client is being limited in context %q.", env.Name)
	}
	now := f.Clock.Now()
	tty := ios.IsStdoutTTY()
	doc := l.result()
	out, err := listingStream(ios, opts.Output, doc, none, now, tty)
	if err != nil {
		return err
	}
	var printErr error
	shown := 0
	stats, err := l.b.Each(ctx, l.q, func(s ratelimit.Status) bool {
		shown++
		printErr = out.Add(s)
		return printErr == nil
	})
	if err == nil {
		err = printErr
	}
	if err != nil {
		l.prog.done()
		return err
	}
	l.ended(f, opts, &doc, stats)
	footer := ""
	if shown < stats.Matched {
		footer = fmt.Sprintf("showing %d of %d buckets (--limit %d)", shown, stats.Matched, opts.Limit)
	}
	return out.End(doc, footer, doc.Unreadable)
}

// listingStream begins the printing of buckets.
func listingStream(ios *iostreams.IOStreams, format string, doc Result, none string, now time.Time, tty bool) (*listing.Stream[ratelimit.Status], error) {
	return listing.NewStream(ios, listing.Spec[ratelimit.Status]{Format: format, Doc: doc, Key: "items",
		View:   func(s ratelimit.Status) any { return bucketview.View(s) },
		Header: []string{"CLIENT", "TOKENS", "NEXT REQUEST", "FULL IN", "UPDATED"},
		Row: func(s ratelimit.Status) []string {
			next := "admitted"
			if !s.Admit {
				next = "refused, retry in " + bucketview.WaitText(s.RetryAfter)
			}
			full := "-"
			if !s.Full() {
				full = bucketview.WaitText(s.UntilFull)
			}
			return []string{s.Client, human.Number(s.Tokens) + "/" + human.Number(s.Limits.Capacity), next, full,
				cmdutil.FormatTime(s.Stored.UpdatedAt(), now, tty)}
		},
		None: none, Noun: "bucket item",
		Fix: "they are skipped, and the data plane fails open on them; replace one with koshactl ratelimit reset CLIENT"})
}

// ScanSummary is the line an explicit scan ends with on stderr: what it
// examined and the read capacity it consumed against its cap.
func ScanSummary(s *store.ReadStats, maxUnits float64) string {
	units := "no read capacity metered (embedded store)"
	if c := s.Capacity(); c > 0 {
		units = fmt.Sprintf("%.1f read capacity units consumed (cap %g/s)", c, maxUnits)
	}
	return fmt.Sprintf("scan: %s examined in %s, %s", human.Count(s.Examined(), "item"), human.Count(s.Requests(), "request"), units)
}

// progress prints a running count on stderr, only when stderr is a
// terminal and the scan turns out long (many items, or more than a second).
type progress struct {
	mu      sync.Mutex
	f       *cmdenv.Factory
	enabled bool
	after   int
	start   time.Time
	shown   bool
}

func newProgress(f *cmdenv.Factory, after int) *progress {
	if after <= 0 {
		after = ProgressAfterItems
	}
	return &progress{f: f, enabled: f.IOStreams.IsStderrTTY(), after: after, start: f.Clock.Now()}
}

// report is the store's Progress callback; segments may call it at once.
func (p *progress) report(examined int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown && examined < p.after && p.f.Clock.Now().Sub(p.start) < ProgressAfter {
		return
	}
	p.shown = true
	fmt.Fprintf(textsafe.Raw(p.f.IOStreams.ErrOut), "\rscanning: %s examined", human.Count(int64(examined), "item"))
}

// done clears the progress line, if one was shown.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(textsafe.Raw(p.f.IOStreams.ErrOut), "\r\033[K")
	}
}
