// Package levercmd is the shell every lever command shares (breaker
// force-open and clear, ratelimit reset, drain and set): the policy flags,
// the change moved through the context's guard (the table's policy, the
// protected context's prompt), and its end: the report's result printed, or
// the change request the policy made of it (exit 12), the announcement, the
// exit. Each command builds its change and words only its own lines; the
// use case is the lever layer's (internal/lever).
package levercmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Flags are what every lever command's flags say of its change.
type Flags struct {
	DryRun, Yes, NoNotify bool
	// Chunked writes a change of more levers than one transaction holds in
	// transactions of [lever.ChunkLevers], each whole (--chunked).
	Chunked    bool
	Output     string
	BreakGlass bool
	RequestTTL time.Duration
}

// AddFlags registers --dry-run, --yes, --chunked, --break-glass,
// --request-ttl, --no-notify and -o; yes is --yes's help.
func AddFlags(cmd *cobra.Command, fl *Flags, yes string) {
	f := cmd.Flags()
	f.BoolVar(&fl.DryRun, "dry-run", false, "show what would change; write nothing")
	AddChunkedFlag(cmd, &fl.Chunked)
	f.BoolVarP(&fl.Yes, "yes", "y", false, yes)
	f.BoolVar(&fl.BreakGlass, "break-glass", false,
		"act at once where the table's policy allows a break-glass (needs --reason; recorded, announced and left for review)")
	f.DurationVar(&fl.RequestTTL, "request-ttl", approval.DefaultTTL,
		fmt.Sprintf("when the policy needs approvals: how long the change request waits for them (%s to %s)", approval.MinTTL, approval.MaxTTL))
	cmdutil.AddNoNotifyFlag(cmd, &fl.NoNotify)
	cmdutil.AddOutputFlag(cmd, &fl.Output)
}

// AddChunkedFlag registers --chunked: a change of more levers than one
// transaction holds is refused unless asked in chunks.
func AddChunkedFlag(cmd *cobra.Command, chunked *bool) {
	cmd.Flags().BoolVar(chunked, "chunked", false, fmt.Sprintf(
		"allow a change of more than %d levers (one transaction's worth) to be written in transactions of %d, each whole; every lever is reported, and a partial write exits %d",
		lever.ChunkLevers, lever.ChunkLevers, exitcode.PartialWrite))
}

// TooLarge words a change refused for its size for the command line: the
// flag that asks for chunks (nil when err is not that refusal).
func TooLarge(err error) error {
	var tle *lever.TooLargeError
	if !errors.As(err, &tle) {
		return err
	}
	if tle.Attached {
		return cmdutil.UsageError(err)
	}
	return cmdutil.Usagef("%v: name at most %d per run, or pass --chunked", err, tle.Max)
}

// Env is a lever command's context, once its flags are checked: the
// request's lifetime, a break-glass without a reason or on a dry run, and
// --no-notify where the context does not allow it, refused before
// anything is read.
func Env(ctx context.Context, f *cmdenv.Factory, fl Flags, reason string) (*cmdenv.Env, error) {
	if err := approval.CheckTTL(fl.RequestTTL); err != nil {
		return nil, cmdutil.Usagef("--request-ttl: %v", err)
	}
	if fl.BreakGlass && (fl.DryRun || strings.TrimSpace(reason) == "") {
		return nil, cmdutil.Usagef("--break-glass needs --reason \"what is happening\" and is not a dry run")
	}
	env, err := f.Env(ctx)
	if err != nil {
		return nil, err
	}
	return env, cmdenv.CheckNoNotify(env, fl.NoNotify)
}

// Table reports whether the output is the human one.
func (fl Flags) Table() bool { return fl.Output == cmdutil.FormatTable }

// Change moves c (with the flags' say in how) through the context's guard:
// planned (the table's policy asked in the levers' batch read), confirmed
// on a protected context (the prompt names the action's verb and counts
// the kind's levers it writes: "force open 3 breaker overrides"; nothing
// to write asks nothing), then committed. Its report is what the
// command prints: a dry run's or a pending request's with nothing written,
// or what was.
func Change(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, c lever.Change, fl Flags) (lever.Report, error) {
	c.DryRun, c.NoNotify, c.BreakGlass, c.RequestTTL = fl.DryRun, fl.NoNotify, fl.BreakGlass, fl.RequestTTL
	c.AtOnce = !env.Context.Protected || fl.Yes // no prompt between the plan and the commit
	c.Chunked = c.Chunked || fl.Chunked
	g := env.Guard()
	p, err := g.Plan(ctx, c)
	switch {
	case p == nil:
		return lever.Report{Change: c}, TooLarge(err)
	case err != nil || c.DryRun:
		return p.Report(), err
	}
	if n := p.Writes(); n > 0 {
		what := p.Action.Verb + " " + human.Count(int64(n), p.Kind.Spec().Lever)
		if err := cmdenv.ConfirmProtected(ctx, f, env, fl.Yes, what, impactLines(p.Impact)...); err != nil {
			return lever.Report{Change: c}, err
		}
	}
	rep, err := g.Commit(ctx, p)
	if len(rep.Written()) == 0 {
		err = TooLarge(err)
	}
	return rep, err
}

// PendingResult is the JSON output of a lever change the table's policy
// made a change request of (and of an agent's proposal).
type PendingResult struct {
	cmdenv.Envelope
	RequestID       string    `json:"request_id"`
	Status          string    `json:"status"`
	Change          string    `json:"change"`
	SHA256          string    `json:"sha256"`
	Requester       string    `json:"requester"`
	ApprovalsNeeded int       `json:"approvals_needed"`
	Policies        []string  `json:"policies"`
	ExpiresAt       time.Time `json:"expires_at"`
	ApproveCommand  string    `json:"approve_command"`
	AuditID         string    `json:"audit_id"`
	// Requests are every request of a change asked in chunks that became
	// one per chunk (this one first); absent for one request.
	Requests []PendingResult `json:"requests,omitempty"`
	// Coalesced is true when the proposal was the requester's identical
	// one, pending already: nothing was stored or announced (MCP).
	Coalesced bool `json:"coalesced,omitempty"`
	// Impact is what the requested change does to the platform's tools
	// (docs/contracts/degradation-matrix.md, "The impact section").
	Impact json.RawMessage `json:"impact,omitempty"`
}

// Pending is p's document.
func Pending(env *cmdenv.Env, p lever.Pending) PendingResult {
	return PendingResult{Envelope: env.Envelope("ChangeRequestResult"), RequestID: p.ID, Status: approval.StatusPending, Change: p.Summary,
		SHA256: p.SHA256, Requester: p.Requester, ApprovalsNeeded: p.Needed, Policies: p.Policies, ExpiresAt: p.ExpiresAt,
		ApproveCommand: p.ApproveCommand(), AuditID: p.AuditID, Coalesced: p.Coalesced, Impact: ImpactJSON(p.Impact)}
}

// Refused is what a command ends with when its change was not made: a
// change request (printed, announced, exit 12), or the refusal (nil:
// the change went ahead, and the command prints its report).
func Refused(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, rep lever.Report, err error, fl Flags) error {
	if rep.Pending == nil {
		if err == nil {
			return nil
		}
		return err
	}
	p, ios := *rep.Pending, f.IOStreams
	requests := rep.Requests
	if len(requests) == 0 {
		requests = []lever.Pending{p}
	}
	if !fl.Table() {
		doc := Pending(env, p)
		if len(requests) > 1 {
			for _, r := range requests {
				doc.Requests = append(doc.Requests, Pending(env, r))
			}
		}
		if perr := cmdutil.PrintStructured(ios.Out, fl.Output, doc); perr != nil {
			return perr
		}
	} else {
		fmt.Fprintf(ios.Out, "Not applied: the table's policy needs %d approval(s) from someone other than you (%s).\n", p.Needed,
			textsafe.Line(strings.Join(p.Policies, ", ")))
		if len(requests) > 1 {
			fmt.Fprintf(ios.Out, "The change is %d requests of at most %d targets, one approval applying each whole:\n", len(requests), approval.MaxTargets)
		}
		for _, r := range requests {
			fmt.Fprintf(ios.Out, "Change request %s: %s\n", r.ID, textsafe.Line(r.Summary))
			fmt.Fprintf(ios.Out, "  sha256 %s\n", r.SHA256)
			fmt.Fprintf(ios.Out, "  expires %s\n", cmdutil.FormatTime(r.ExpiresAt, f.Clock.Now(), ios.IsStdoutTTY()))
			fmt.Fprintf(ios.Out, "Another person approves it with:\n  %s\n", r.ApproveCommand())
			Impact(ios.Out, r.Impact)
		}
	}
	cmdenv.PrintActedOn(ios.ErrOut, env, false)
	cmdenv.Announce(ctx, env, rep.Event)
	for _, ev := range rep.RequestEvents {
		cmdenv.Announce(ctx, env, ev)
	}
	return err
}

// Print writes a lever command's result: doc in the structured format the
// flags name, or the table's text (its lines, each rendered safe by the
// command); then the line naming the context acted on, on stderr.
func Print(f *cmdenv.Factory, env *cmdenv.Env, fl Flags, doc any, text string) error {
	ios := f.IOStreams
	defer cmdenv.PrintActedOn(ios.ErrOut, env, fl.DryRun)
	if !fl.Table() {
		return cmdutil.PrintStructured(ios.Out, fl.Output, doc)
	}
	_, err := io.WriteString(ios.Out, text)
	return err
}

// End is a lever command's end once its change is made: the table's text
// printed before the wait (then the wait's own lines), or doc printed once
// after it (the wait fills its view in); the announcement of what was
// written sent between the two, and even when a print fails. wait is nil
// without --wait; its error is returned when the print succeeds.
func End(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, fl Flags, ev *notify.Event, doc any, text string, wait func() error) error {
	announce := sync.OnceFunc(func() { cmdenv.Announce(ctx, env, ev) })
	// Written is written: a print that fails (a closed stdout) does not
	// keep the change from being announced.
	defer announce()
	if wait == nil || fl.Table() {
		if err := Print(f, env, fl, doc, text); err != nil {
			return err
		}
	}
	announce()
	if wait == nil {
		return nil
	}
	err := wait()
	if !fl.Table() {
		if perr := Print(f, env, fl, doc, text); perr != nil {
			return perr
		}
	}
	return err
}

// CheckWait refuses --wait's flags where they cannot work, before anything
// is read: its other flags (named) without --wait, --wait on a dry run, a
// --timeout that is not positive (fix says what to give instead).
func CheckWait(cmd *cobra.Command, wait, dryRun bool, timeout time.Duration, fix string, flags ...string) error {
	if !wait {
		for _, name := range flags {
			if cmd.Flags().Changed(name) {
				return cmdutil.Usagef("--%s only applies with --wait: add --wait, or drop --%s", name, name)
			}
		}
		return nil
	}
	if dryRun {
		return cmdutil.Usagef("--wait has nothing to wait for with --dry-run: drop one of them")
	}
	if cmd.Flags().Changed("timeout") && timeout <= 0 {
		return cmdutil.Usagef("--timeout %s is not positive: %s", human.Duration(timeout), fix)
	}
	return nil
}

// ImpactJSON is a change's impact as its result's JSON holds it: the
// `impact` section of docs/contracts/degradation-matrix.md (nil: none, or
// one that cannot be encoded). A result keeps it encoded, so a reader of
// the document decodes it like any other member.
func ImpactJSON(im lever.Impact) json.RawMessage {
	if im == nil {
		return nil
	}
	b, err := json.Marshal(im)
	if err != nil {
		return nil
	}
	return b
}

// Impact writes a change's impact under its result: the table of the
// tools it changes (nothing when none).
func Impact(w io.Writer, im lever.Impact) {
	if im != nil {
		_ = im.Render(w)
	}
}

// impactLines are a change's impact as a protected context's prompt shows
// it, under a heading (none without an impact).
func impactLines(im lever.Impact) []string {
	if im == nil {
		return nil
	}
	return append([]string{"This change's impact (the degradation matrix, LLD §8):"}, im.Lines()...)
}

// Confirmed writes, under a result's line, that its change's answer was
// lost and the change confirmed.
func Confirmed(w io.Writer, confirmed bool) {
	if confirmed {
		fmt.Fprintf(w, "  %s\n", store.ConfirmedNote)
	}
}

// BreakGlass writes the review line under a break-glass change's result.
func BreakGlass(w io.Writer, review string) {
	if review != "" {
		fmt.Fprintf(w, "BREAK-GLASS: recorded and announced; review %s stays open until someone else runs: koshactl request ack %s\n", review, review)
	}
}

// Review is the review a report's change opened, when it wrote something.
func Review(rep lever.Report) string {
	if len(rep.Written()) == 0 {
		return ""
	}
	return rep.Review
}

// Tally is what a lever command's result says of its change beside its
// levers: the review a --break-glass change opened, every lever not
// written and why, and how a change asked in chunks went.
type Tally struct {
	// Review is the review a --break-glass change opened.
	Review string `json:"review,omitempty"`
	// NotWritten lists every lever not written, and why.
	NotWritten []NotWritten `json:"not_written"`
	// Chunks says how a change asked in chunks went (none: one transaction).
	Chunks *Chunks `json:"chunks,omitempty"`
}

// TallyOf is rep's tally; unwritten are its levers not written.
func TallyOf(rep lever.Report, unwritten []Unwritten) Tally {
	return Tally{Review: Review(rep), NotWritten: NotWrittenOf(unwritten, chunkOf(rep)), Chunks: ChunksOf(rep)}
}

// PrintUnder writes the tally's lines under a table of listed levers: the
// chunks and the levers not written ([PrintChunks]), then the break-glass
// review.
func (t Tally) PrintUnder(w io.Writer, listed int) {
	PrintChunks(w, t.Chunks, t.NotWritten, listed)
	BreakGlass(w, t.Review)
}

// Unwritten is a target whose change was not written: refused, failed, or
// (store.ErrOutcomeUnknown) nobody can tell.
type Unwritten struct {
	// Name is the target as the output names it.
	Name string
	// Err is why, as the lever service words it (the verb and the target).
	Err error
}

// maxNamed bounds the targets a failure names in each of its groups (a
// clear --all may fail thousands).
const maxNamed = 20

// Failure is the one error of a lever command of targets targets, of which
// written were written and unwritten were not (nil when none). It is the
// first target's error, and when the command had several targets, what
// became of each: written (listed above), outcome unknown (with check, the
// command that tells), or not written. Any unknown outcome makes it an
// unknown outcome (exit 8), whatever the first error was: someone has to
// check; otherwise some written and some not is a partial write (exit 16,
// never 4: something was done). items names what the targets are
// ("overrides").
func Failure(targets, written int, unwritten []Unwritten, items, check string) error {
	if len(unwritten) == 0 {
		return nil
	}
	first := unwritten[0].Err
	if targets == 1 {
		return first
	}
	var unknown, refused []string
	for _, u := range unwritten {
		if errors.Is(u.Err, store.ErrOutcomeUnknown) {
			unknown = append(unknown, u.Name)
		} else {
			refused = append(refused, u.Name)
		}
	}
	var groups []string
	if written > 0 {
		groups = append(groups, fmt.Sprintf("%d written (listed above)", written))
	}
	if len(unknown) > 0 {
		groups = append(groups, fmt.Sprintf("%d with an unknown outcome: %s (check each with %s)", len(unknown), names(unknown), check))
	}
	if len(refused) > 0 {
		groups = append(groups, fmt.Sprintf("%d not written: %s", len(refused), names(refused)))
	}
	summary := fmt.Sprintf("of %d %s, %s", targets, items, strings.Join(groups, "; "))
	switch {
	case len(unknown) > 0 && !errors.Is(first, store.ErrOutcomeUnknown):
		return fmt.Errorf("%w; %s: %w", first, summary, store.ErrOutcomeUnknown)
	case len(unknown) == 0 && written > 0:
		return exitcode.Errorf(exitcode.PartialWrite, "partial write, each transaction whole: %w; %s", first, summary)
	}
	return fmt.Errorf("%w; %s", first, summary)
}

// NotWritten is a lever a change did not write, as every output lists it
// (`not_written` in -o json|yaml, a line of its own in the table).
type NotWritten struct {
	Target string `json:"target"`
	// Outcome is not-written (nothing of it landed) or unknown (nobody can
	// tell: check it).
	Outcome string `json:"outcome"`
	// Chunk is the transaction that carried it, of a change written in
	// chunks (0: one transaction).
	Chunk int    `json:"chunk,omitempty"`
	Why   string `json:"why"`
}

// NotWrittenOf lists the unwritten levers for the output; chunk gives each
// one's transaction (nil: none).
func NotWrittenOf(unwritten []Unwritten, chunk func(name string) int) []NotWritten {
	out := make([]NotWritten, 0, len(unwritten))
	for _, u := range unwritten {
		nw := NotWritten{Target: u.Name, Outcome: "not-written", Why: u.Err.Error()}
		if errors.Is(u.Err, store.ErrOutcomeUnknown) {
			nw.Outcome = "unknown"
		}
		if chunk != nil {
			nw.Chunk = chunk(u.Name)
		}
		out = append(out, nw)
	}
	return out
}

// chunkOf is the lookup of rep's targets' transactions for
// [NotWrittenOf] (names as the targets are).
func chunkOf(rep lever.Report) func(name string) int {
	chunks := make(map[string]int, len(rep.Outcomes))
	for _, o := range rep.Outcomes {
		chunks[o.Target] = o.Chunk
	}
	return func(name string) int { return chunks[name] }
}

// Chunks is how a change written in chunks went, for every output: the
// transactions sent and what each did (nil: one transaction).
type Chunks struct {
	Transactions int `json:"transactions"`
	// LeversPerTransaction is the most levers one carried.
	LeversPerTransaction int `json:"levers_per_transaction"`
	Written              int `json:"written"`
	NotWritten           int `json:"not_written"`
}

// ChunksOf is rep's chunks (nil when it was not written in chunks).
func ChunksOf(rep lever.Report) *Chunks {
	c := &Chunks{LeversPerTransaction: lever.ChunkLevers}
	for _, o := range rep.Outcomes {
		if o.Chunk == 0 {
			continue
		}
		c.Transactions = max(c.Transactions, o.Chunk)
		if o.Written {
			c.Written++
		} else {
			c.NotWritten++
		}
	}
	if c.Transactions == 0 {
		return nil
	}
	return c
}

// PrintChunks writes the table's account of a change written in chunks
// and of every lever not written (each on its own line, why included)
// beside the listed levers the table names (written or already as asked).
// A change that listed nothing and was one transaction prints nothing:
// its error (stderr) names every lever, and stdout claims no result of a
// change nothing of which is known to have landed.
func PrintChunks(w io.Writer, c *Chunks, notWritten []NotWritten, listed int) {
	if c == nil && listed == 0 {
		return
	}
	if c != nil {
		fmt.Fprintf(w, "Written in %d transactions of at most %d levers, each whole: %d written, %d not written.\n",
			c.Transactions, c.LeversPerTransaction, c.Written, c.NotWritten)
	}
	for _, nw := range notWritten {
		what := "Not written"
		if nw.Outcome == "unknown" {
			what = "Outcome unknown"
		}
		where := ""
		if nw.Chunk > 0 {
			where = fmt.Sprintf(" (transaction %d)", nw.Chunk)
		}
		fmt.Fprintf(w, "%s: %s%s: %s\n", what, textsafe.Line(nw.Target), where, textsafe.Line(nw.Why))
	}
}

// names lists up to maxNamed names, then how many more.
func names(list []string) string {
	if len(list) <= maxNamed {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:maxNamed], ", "), len(list)-maxNamed)
}
