package list_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	auditlist "github.com/kosha-platform/koshactl/internal/cmd/audit/list"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

type record struct {
	Time    string `json:"time"`
	Actor   string `json:"actor"`
	Action  string `json:"action"`
	Subject string `json:"subject"`
}

func list(t *testing.T, e *clitest.Env, args ...string) []record {
	t.Helper()
	var out struct{ Items []record }
	r := e.MustRun(0, append([]string{"audit", "list", "-o", "json"}, args...)...)
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	return out.Items
}

func subjects(rs []record) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Subject)
	}
	return strings.Join(s, ",")
}

func TestListFiltersByActorUntilAndAction(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.Setenv("KOSHACTL_ACTOR", "alice@ops")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "r", "--for", "1h") // 19:00
	e.Clock.Advance(time.Hour)
	e.Setenv("KOSHACTL_ACTOR", "bob@ops")
	e.MustRun(0, "breaker", "force-open", "core-api", "--reason", "r", "--for", "1h") // 20:00
	e.Clock.Advance(time.Hour)
	e.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "r") // 21:00, bob

	cases := []struct {
		args []string
		want string
	}{
		{nil, "rl#agent-1,breaker#core-api,breaker#openai"},
		{[]string{"--actor", "alice@ops"}, "breaker#openai"},
		{[]string{"--actor", "bob@*"}, "rl#agent-1,breaker#core-api"},
		{[]string{"--actor", "bob"}, ""},
		{[]string{"--until", "2026-11-29T20:00:01Z"}, "breaker#core-api,breaker#openai"},
		{[]string{"--until", "2026-11-29T20:00:00Z"}, "breaker#openai"}, // the window is [since, until)
		{[]string{"--until", "90m"}, "breaker#openai"},
		{[]string{"--since", "90m", "--until", "30m"}, "breaker#core-api"},
		{[]string{"--action", "breaker.force-open", "--actor", "bob@ops"}, "breaker#core-api"},
	}
	for _, c := range cases {
		if got := subjects(list(t, e, c.args...)); got != c.want {
			t.Errorf("audit list %s = %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
	}
	for _, args := range [][]string{
		{"--until", "yesterday"},
		{"--until", "-1h"},
		{"--since", "30m", "--until", "1h"},
		{"--follow", "--until", "1h"},
		{"--follow", "--interval", "0s"},
	} {
		r := e.MustRun(exitcode.Usage, append([]string{"audit", "list"}, args...)...)
		if r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("audit list %s: %q %q", strings.Join(args, " "), r.Stdout, r.Stderr)
		}
	}
}

// follower runs audit list --follow in the background on the same
// installation as e; tick lets it read once more.
type follower struct {
	out  *syncbuf.Buffer
	tick chan time.Time
	stop context.CancelFunc
	done chan error
}

func startFollow(t *testing.T, e *clitest.Env, opts *auditlist.Options) *follower {
	t.Helper()
	fw := &follower{out: &syncbuf.Buffer{}, tick: make(chan time.Time), done: make(chan error, 1)}
	ios, _, _, _ := iostreams.Test()
	ios.Out = fw.out
	f := e.Factory(ios)
	opts.Follow = true
	opts.Interval = time.Second
	opts.After = func(time.Duration) <-chan time.Time { return fw.tick }
	ctx, cancel := context.WithCancel(context.Background())
	fw.stop = cancel
	go func() { fw.done <- auditlist.Run(ctx, f, opts) }()
	t.Cleanup(cancel)
	return fw
}

// waitFor polls the output until it holds want, moving the follower on
// each time it waits for its next read.
func (fw *follower) waitFor(t *testing.T, want string) {
	t.Helper()
	if err := wait.For(t.Context(), fmt.Sprintf("--follow to print %q", want), func() bool {
		if strings.Contains(fw.out.String(), want) {
			return true
		}
		select {
		case err := <-fw.done:
			t.Fatalf("--follow ended early (%v):\n%s", err, fw.out.String())
		case fw.tick <- time.Time{}: // the follower waited: read again
		default:
		}
		return false
	}); err != nil {
		t.Fatalf("%v:\n%s", err, fw.out.String())
	}
}

func TestFollowPrintsNewRecordsAsWrittenAndExitsCleanly(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "before the follow", "--for", "1h")
	fw := startFollow(t, e, &auditlist.Options{Output: cmdutil.FormatTable, Limit: 50})
	fw.waitFor(t, "breaker#openai")
	if !strings.HasPrefix(fw.out.String(), "TIME ") {
		t.Errorf("the table starts with its header:\n%s", fw.out.String())
	}

	e.Clock.Advance(time.Minute)
	e.MustRun(0, "breaker", "force-open", "core-api", "--reason", "during the follow", "--for", "1h")
	fw.waitFor(t, "breaker#core-api")

	// A record stamped before the last one shown (a writer whose clock is
	// 20s behind) still appears: each read looks back a minute.
	e.Clock.Advance(-20 * time.Second)
	e.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "late writer")
	fw.waitFor(t, "rl#agent-1")
	e.Clock.Advance(20 * time.Second)
	fw.tick <- time.Time{}
	fw.tick <- time.Time{} // two more reads: nothing is printed twice

	fw.stop()
	if err := <-fw.done; err != nil {
		t.Fatalf("a canceled follow returns nil (exit 0), got %v", err)
	}
	out := fw.out.String()
	for _, s := range []string{"breaker#openai", "breaker#core-api", "rl#agent-1"} {
		if n := strings.Count(out, s); n != 1 {
			t.Errorf("%s printed %d times:\n%s", s, n, out)
		}
	}
	if strings.Index(out, "breaker#openai") > strings.Index(out, "breaker#core-api") {
		t.Errorf("records print oldest first:\n%s", out)
	}
	if strings.Count(out, "TIME ") != 1 {
		t.Errorf("one header for the whole follow:\n%s", out)
	}
}

func TestFollowJSONIsOneRecordPerLineAndFilters(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fw := startFollow(t, e, &auditlist.Options{Output: cmdutil.FormatJSON, Action: "breaker.force-open"})
	e.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "filtered out")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "kept", "--for", "1h")
	fw.waitFor(t, "breaker#openai")
	fw.stop()
	if err := <-fw.done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(fw.out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one JSON line, got:\n%s", fw.out.String())
	}
	var r record
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil || r.Subject != "breaker#openai" || r.Action != "breaker.force-open" {
		t.Errorf("line %q: %+v %v", lines[0], r, err)
	}
}

// Issue 21: --follow dropped records it could not read. It warns about each
// once, on stderr, shows the records it can read (one with attributes of
// every DynamoDB type among them), and ends as a partial listing (exit 10).
func TestFollowReportsUnreadableRecords(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	errOut := &syncbuf.Buffer{}
	fw := &follower{out: &syncbuf.Buffer{}, tick: make(chan time.Time), done: make(chan error, 1)}
	ios, _, _, _ := iostreams.Test()
	ios.Out, ios.ErrOut = fw.out, errOut
	f := e.Factory(ios)
	ctx, cancel := context.WithCancel(context.Background())
	fw.stop = cancel
	t.Cleanup(cancel)
	go func() {
		fw.done <- auditlist.Run(ctx, f, &auditlist.Options{Output: cmdutil.FormatTable, Follow: true, Interval: time.Second,
			After: func(time.Duration) <-chan time.Time { return fw.tick }})
	}()
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "first", "--for", "1h")
	fw.waitFor(t, "breaker#openai")

	ms := strconv.FormatInt(e.Clock.Now().UnixMilli(), 10)
	rec := func(id, subject string) map[string]storetest.Attr {
		return map[string]storetest.Attr{"pk": {Type: "S", Text: "audit#" + ms + "#" + id}, "time": {Type: "N", Text: ms},
			"actor": {Type: "S", Text: "x"}, "action": {Type: "S", Text: "breaker.clear"}, "subject": {Type: "S", Text: subject},
			"context": {Type: "S", Text: "local"}, "outcome": {Type: "S", Text: "ok"},
			"ix_audit_day": {Type: "S", Text: e.Clock.Now().UTC().Format("2006-01-02")}, "ix_audit_subject": {Type: "S", Text: subject},
			"ix_audit_actor": {Type: "S", Text: "x"}, "ix_list": {Type: "S", Text: "audit#0"}, "ix_list_sort": {Type: "S", Text: ms + "#" + id}}
	}
	bad := rec("00000000000000bb", "breaker#bad")
	bad["before"] = storetest.Attr{Type: "S", Text: "{not json"}
	e.PutRaw(bad)
	odd := rec("00000000000000cc", "breaker#odd")
	for k, v := range storetest.EveryType {
		odd[k] = v
	}
	e.PutRaw(odd)
	fw.waitFor(t, "breaker#odd")
	warning := "warning: audit#" + ms + "#00000000000000bb: before: found an S that is not a JSON document"
	if err := wait.For(t.Context(), fmt.Sprintf("--follow to warn %q", warning), func() bool {
		if strings.Contains(errOut.String(), warning) {
			return true
		}
		select {
		case fw.tick <- time.Time{}:
		default:
		}
		return false
	}); err != nil {
		t.Fatalf("%v:\nstderr %s\nstdout %s", err, errOut.String(), fw.out.String())
	}
	fw.tick <- time.Time{}
	fw.tick <- time.Time{} // more reads: each problem is reported once
	fw.stop()
	err := <-fw.done
	if exitcode.Of(err) != exitcode.Partial || !strings.Contains(err.Error(), "1 audit record does not follow the contract") {
		t.Errorf("follow ended with %v, want the partial listing (exit 10)", err)
	}
	if n := strings.Count(errOut.String(), warning); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, errOut.String())
	}
	if !strings.Contains(fw.out.String(), "breaker#bad") {
		t.Errorf("the record is shown without its unreadable before:\n%s", fw.out.String())
	}
}
