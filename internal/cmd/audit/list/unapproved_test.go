package list_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	auditlist "github.com/kosha-platform/koshactl/internal/cmd/audit/list"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// The bypassing writer's actor and reason: terminal controls, a bidi
// override, chat mentions, a Slack link and markdown.
const (
	hostileActor  = "mallory\x1b[2J<!here> *ops*\u202e"
	hostileReason = "<!channel> @here see <http://evil.example|runbook> *now* & `x`\nsecond line"
)

// fourEyes needs one approval for every breaker lever, lets anyone break
// the glass, and allows the bucket levers at once.
const fourEyes = `@id("four-eyes")
@approvals("1")
permit (principal, action in [Kosha::Action::"breaker.force-open", Kosha::Action::"breaker.clear"], resource)
when { context.approvals >= 1 };
@id("break-glass")
permit (principal, action in [Kosha::Action::"breaker.force-open", Kosha::Action::"breaker.clear"], resource)
when { context.break_glass };
@id("buckets")
permit (principal, action in [Kosha::Action::"ratelimit.reset", Kosha::Action::"ratelimit.drain", Kosha::Action::"ratelimit.set"], resource);
`

// bypassWorld is a local context whose changes are announced to a JSON
// and a Slack webhook.
type bypassWorld struct {
	*clitest.Env
	hook, chat *notifytest.Receiver
}

func newBypassWorld(t *testing.T) *bypassWorld {
	t.Helper()
	e := clitest.New(t, clitest.Parallel())
	hook, chat := notifytest.Start(t, notifytest.Accept), notifytest.Start(t, notifytest.Accept)
	e.WriteConfig(fmt.Sprintf("current-context: dev\ncontexts:\n  dev:\n    store:\n      local: {}\n    dependencies: [openai, core-api]\n"+
		"    notify:\n      - name: hook\n        webhook:\n          url: %s\n      - name: chat\n        webhook:\n          url: %s\n          format: slack\n",
		hook.URL(), chat.URL()))
	return &bypassWorld{Env: e, hook: hook, chat: chat}
}

// setPolicy stores fourEyes as the table's policy.
func (w *bypassWorld) setPolicy() {
	w.T.Helper()
	file := filepath.Join(w.T.TempDir(), "four-eyes.cedar")
	if err := os.WriteFile(file, []byte(fourEyes), 0o600); err != nil {
		w.T.Fatal(err)
	}
	w.MustRun(0, "policy", "set", file, "--reason", "four eyes")
}

// env is the context's environment, as a command gets it.
func (w *bypassWorld) env() (context.Context, *approval.Service, *audit.Log) {
	w.T.Helper()
	ios, _, _, _ := iostreams.Test()
	ctx := context.Background()
	env, err := w.Factory(ios).Env(ctx)
	if err != nil {
		w.T.Fatal(err)
	}
	return ctx, env.Approvals(), env.Audit()
}

// bypass forces dependency as a writer that never asks the policy (an
// older koshactl, another tool) would: the override and its record, no
// approval. It returns the record's id.
func (w *bypassWorld) bypass(dependency string) string {
	w.T.Helper()
	ios, _, _, _ := iostreams.Test()
	ctx := context.Background()
	env, err := w.Factory(ios).Env(ctx)
	if err != nil {
		w.T.Fatal(err)
	}
	log := env.Audit()
	// Such a writer follows none of koshactl's rules (its reason is
	// hostile): the item and its record, in one transaction of its own.
	now := env.Clock.Now().UTC().Truncate(time.Millisecond)
	o := breaker.Override{Dependency: dependency, State: breaker.OverrideStateForcedOpen, Reason: hostileReason, Actor: hostileActor,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Version: 1}
	token, err := store.NewWriteID()
	if err != nil {
		w.T.Fatal(err)
	}
	o.WriteID = token
	rec, rop, err := log.Stage(ctx, audit.Entry{Actor: hostileActor, Action: breaker.ActionForceOpen, Subject: breaker.OverrideKey(dependency),
		Reason: hostileReason, After: breaker.AuditState(&o)}, token, 0)
	if err != nil {
		w.T.Fatal(err)
	}
	put := store.PutOp(o.Item(), store.Condition{})
	if _, err := store.Apply(ctx, env.Store, store.Change{Token: token, Ops: []store.Op{put, rop}, Proof: rop.PK()}); err != nil {
		w.T.Fatal(err)
	}
	return rec.ID
}

// approved makes and applies a change through the policy: alice asks to
// clear dependency (a change request, exit 12) and bob, verified by STS,
// approves it through the service `request approve` runs.
func (w *bypassWorld) approved(dependency string) {
	w.T.Helper()
	w.Setenv("KOSHACTL_ACTOR", "alice@ops")
	r := w.MustRun(exitcode.Pending, "breaker", "clear", dependency, "--reason", "provider recovered", "-o", "json")
	w.Setenv("KOSHACTL_ACTOR", "tester@test")
	req := clitest.Decode[struct {
		RequestID string `json:"request_id"`
		SHA256    string `json:"sha256"`
	}](w.T, r.Stdout)
	ctx, svc, log := w.env()
	bob := audit.Identity{Actor: "arn:aws:iam::123456789012:user/bob", Source: audit.ActorSTS, UserID: "AIDABOB"}
	res, err := svc.Approve(ctx, log, approval.Approval{ID: req.RequestID, Approver: bob, SHA256: req.SHA256})
	if err != nil || !res.Applied {
		w.T.Fatalf("bob's approval of %s: %+v, %v", req.RequestID, res, err)
	}
}

type flaggedRecord struct {
	ID         string `json:"id"`
	Action     string `json:"action"`
	Subject    string `json:"subject"`
	Actor      string `json:"actor"`
	Unapproved bool   `json:"unapproved"`
}

func (w *bypassWorld) unapproved(want int, args ...string) ([]flaggedRecord, clitest.Result) {
	w.T.Helper()
	r := w.MustRun(want, append([]string{"audit", "list", "--unapproved", "-o", "json"}, args...)...)
	return clitest.Decode[struct{ Items []flaggedRecord }](w.T, r.Stdout).Items, r
}

// Issue 32: a lever change that bypassed the table's policy was flagged in
// audit list and the dashboard, and announced nowhere. audit list
// --unapproved lists only those changes and exits 1; --notify announces each
// once (policy.bypassed), the record's text escaped in the chat form. An
// approved change, a break-glass and an allowed one are neither listed nor
// announced.
func TestUnapprovedListsAndAnnouncesOnlyBypasses(t *testing.T) {
	t.Parallel()
	w := newBypassWorld(t)
	// Before the policy: nothing can be unapproved.
	w.MustRun(0, "breaker", "force-open", "openai", "--reason", "before the policy", "--for", "2h")
	w.bypass("core-api")
	items, r := w.unapproved(0, "--notify")
	if len(items) != 0 || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "no change policy") {
		t.Fatalf("without a policy: items %+v, stderr %q", items, r.Stderr)
	}
	if r := w.MustRun(0, "audit", "list", "--unapproved"); !strings.Contains(r.Stdout, "No unapproved lever changes.") {
		t.Errorf("without a policy, table: %q", r.Stdout)
	}

	w.Clock.Advance(time.Minute)
	w.setPolicy()
	policySince := w.Clock.Now().UTC()
	w.Clock.Advance(time.Minute)
	w.approved("openai")
	w.MustRun(0, "breaker", "force-open", "openai", "--reason", "customers down", "--for", "30m", "--break-glass")
	w.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "allowed at once")
	if items, _ := w.unapproved(0); len(items) != 0 {
		t.Fatalf("approved, break-glass and allowed changes flagged: %+v", items)
	}
	for _, ev := range w.hook.Events(t) {
		if ev.Action == notify.ActionPolicyBypassed {
			t.Fatalf("announced before any bypass: %+v", ev)
		}
	}
	before := len(w.hook.Requests())

	w.Clock.Advance(time.Minute)
	first := w.bypass("core-api")
	w.Clock.Advance(time.Minute)
	second := w.bypass("openai")

	items, r = w.unapproved(exitcode.Error)
	if len(items) != 2 || items[0].ID != second || items[1].ID != first || !items[0].Unapproved || !items[1].Unapproved ||
		items[0].Actor != hostileActor || items[0].Action != breaker.ActionForceOpen {
		t.Fatalf("--unapproved listed %+v, want the two bypasses %s and %s, newest first", items, second, first)
	}
	if !strings.Contains(r.Stderr, "2 unapproved lever changes") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line counting them", r.Stderr)
	}
	if n := len(w.hook.Requests()); n != before {
		t.Fatalf("--unapproved without --notify sent %d notifications", n-before)
	}
	table := w.MustRun(exitcode.Error, "audit", "list", "--unapproved")
	if strings.Count(table.Stdout, "UNAPPROVED") != 2 || strings.ContainsAny(table.Stdout, "\x1b\u202e") {
		t.Errorf("table:\n%q", table.Stdout)
	}
	if items, _ := w.unapproved(exitcode.Error, "--limit", "1"); len(items) != 1 || items[0].ID != second {
		t.Errorf("--limit 1 counts the flagged records: %+v", items)
	}
	if items, _ := w.unapproved(exitcode.Error, "--subject", "breaker#core-api"); len(items) != 1 || items[0].ID != first {
		t.Errorf("--subject narrows them: %+v", items)
	}

	// --notify: one policy.bypassed per record, to every sink, oldest first.
	w.unapproved(exitcode.Error, "--notify")
	evs := w.hook.Events(t)[before:]
	if len(evs) != 2 {
		t.Fatalf("--notify sent %d notifications, want 2: %+v", len(evs), evs)
	}
	for i, id := range []string{first, second} {
		ev := evs[i]
		subject := []string{"breaker#core-api", "breaker#openai"}[i]
		if ev.Action != notify.ActionPolicyBypassed || ev.Outcome != "unapproved" || ev.Actor != hostileActor || ev.Reason != hostileReason ||
			ev.Context != "dev" || strings.Join(ev.AuditIDs, ",") != id || len(ev.Levers) != 1 || ev.Levers[0].Subject != subject {
			t.Errorf("notification %d: %+v, want policy.bypassed of record %s", i, ev, id)
		}
		for _, want := range []string{"audit record " + id, breaker.ActionForceOpen + " of " + subject,
			"since " + policySince.Format(time.RFC3339), "found by tester@test"} {
			if !strings.Contains(ev.Detail, want) {
				t.Errorf("notification %d detail %q lacks %q", i, ev.Detail, want)
			}
		}
	}
	texts := w.chat.SlackTexts(t)
	for _, text := range texts[len(texts)-2:] {
		if strings.ContainsAny(text, "<>\x1b\u202e") || !strings.Contains(text, "&lt;!channel&gt; @here see &lt;http://evil.example|runbook&gt;") ||
			!strings.Contains(text, `mallory\x1b[2J&lt;!here&gt;`) || !strings.Contains(text, `\nsecond line`) {
			t.Errorf("Slack message not escaped:\n%q", text)
		}
	}

	// --since: the bypasses are older than the window.
	w.Clock.Advance(30 * time.Minute)
	if items, r := w.unapproved(0, "--since", "15m", "--notify"); len(items) != 0 || r.Stderr != "" {
		t.Errorf("--since 15m: %+v, stderr %q", items, r.Stderr)
	}
	if n := len(w.hook.Requests()); n != before+2 {
		t.Errorf("an empty window announced %d more", n-before-2)
	}
}

func TestNotifyNeedsUnapprovedAndASink(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	if r := e.MustRun(exitcode.Usage, "audit", "list", "--notify"); !strings.Contains(r.Stderr, "add --unapproved") {
		t.Errorf("--notify alone: %q", r.Stderr)
	}
	if r := e.MustRun(exitcode.Usage, "audit", "list", "--unapproved", "--notify"); !strings.Contains(r.Stderr, "no notification sinks") {
		t.Errorf("--notify without a sink: %q", r.Stderr)
	}
}

// With --follow, a bypass written while following is printed and announced
// once, however often the follow reads it again; a change through the
// policy is neither, nor is a change before the table had a policy (the
// follow started before it, and reads the policy before each read); the
// follow ends (Ctrl-C) with exit 1.
func TestFollowUnapprovedAnnouncesEachOnce(t *testing.T) {
	t.Parallel()
	w := newBypassWorld(t)
	fw := &follower{out: &syncbuf.Buffer{}, tick: make(chan time.Time), done: make(chan error, 1)}
	ios, _, _, _ := iostreams.Test()
	errOut := &syncbuf.Buffer{}
	ios.Out, ios.ErrOut = fw.out, errOut
	f := w.Factory(ios)
	ctx, cancel := context.WithCancel(context.Background())
	fw.stop = cancel
	t.Cleanup(cancel)
	go func() {
		fw.done <- auditlist.Run(ctx, f, &auditlist.Options{Output: cmdutil.FormatJSON, Follow: true, Interval: time.Second, Limit: 50,
			Unapproved: true, Notify: true, After: func(time.Duration) <-chan time.Time { return fw.tick }})
	}()
	early := w.bypass("openai")
	if err := wait.For(t.Context(), "the follow's first read", func() bool {
		select {
		case fw.tick <- time.Time{}: // it read once and waits: once more
			return true
		default:
			return false
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "no change policy") {
		t.Errorf("stderr %q, want the note that the table has no policy", errOut.String())
	}
	w.Clock.Advance(time.Minute)
	w.setPolicy()
	base := len(w.hook.Requests())
	w.Clock.Advance(time.Minute)
	w.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "allowed at once")
	id := w.bypass("core-api")
	fw.waitFor(t, id)
	bypassed := func() []string {
		var ids []string
		for _, ev := range w.hook.Events(t)[base:] {
			if ev.Action == notify.ActionPolicyBypassed {
				ids = append(ids, strings.Join(ev.AuditIDs, ","))
			}
		}
		return ids
	}
	if err := wait.For(t.Context(), "the bypass's notification", func() bool { return len(bypassed()) > 0 }); err != nil {
		t.Fatal(err)
	}
	w.Clock.Advance(20 * time.Second)
	for range 3 {
		fw.tick <- time.Time{} // more reads within the lookback: nothing twice
	}
	fw.stop()
	err := <-fw.done
	if exitcode.Of(err) != exitcode.Error || !strings.Contains(err.Error(), "1 unapproved lever change") {
		t.Errorf("follow ended with %v, want exit 1 counting one change", err)
	}
	if out := fw.out.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, `"unapproved":true`) || strings.Contains(out, early) {
		t.Errorf("follow printed:\n%s", out)
	}
	if got := bypassed(); strings.Join(got, " ") != id {
		t.Errorf("policy.bypassed notifications for %v, want one for %s", got, id)
	}
}

// A policy item koshactl cannot parse still has its since: what bypassed it
// is listed (lever commands refuse every change on such a table, which is
// when a writer is most tempted to go around koshactl). An item without a
// since cannot say which changes should have asked it: --unapproved is
// refused (exit 7) rather than answering "none".
func TestUnapprovedOnAPolicyItemKoshactlCannotUse(t *testing.T) {
	t.Parallel()
	w := newBypassWorld(t)
	since := strconv.FormatInt(w.Clock.Now().UnixMilli(), 10)
	w.PutRaw(map[string]storetest.Attr{"pk": {Type: "S", Text: "policy#table"}, "text": {Type: "S", Text: "permit (principal, action"},
		"since": {Type: "N", Text: since}})
	id := w.bypass("openai")
	if items, _ := w.unapproved(exitcode.Error); len(items) != 1 || items[0].ID != id {
		t.Errorf("under an unreadable policy: %+v, want %s", items, id)
	}
	if r := w.MustRun(0, "audit", "list"); !strings.Contains(r.Stdout, "UNAPPROVED") {
		t.Errorf("audit list under an unreadable policy:\n%s", r.Stdout)
	}
	w.PutRaw(map[string]storetest.Attr{"pk": {Type: "S", Text: "policy#table"}, "text": {Type: "S", Text: fourEyes}})
	if r := w.MustRun(exitcode.Refused, "audit", "list", "--unapproved"); !strings.Contains(r.Stderr, "has no since") || r.Stdout != "" {
		t.Errorf("a policy without since: %q %q", r.Stdout, r.Stderr)
	}
}
