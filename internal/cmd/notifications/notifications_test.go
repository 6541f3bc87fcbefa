package notifications_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// hostile is the reason every command is given: chat mentions, a Slack
// link, markdown.
const hostile = "<!channel> @here see <http://evil.example|runbook> *now* & `x`"

func localConfig(extra string, sinks ...string) string {
	return "current-context: dev\ncontexts:\n  dev:\n    store:\n      local: {}\n" + extra + "    notify:\n" + strings.Join(sinks, "")
}

func slackSink(name, url string) string {
	return fmt.Sprintf("      - name: %s\n        webhook:\n          url: %s\n          format: slack\n", name, url)
}

func jsonSinkEnv(name, env string) string {
	return fmt.Sprintf("      - name: %s\n        webhook:\n          url-env: %s\n", name, env)
}

// slackSafe fails when text holds a raw <, > or a bare &.
func slackSafe(t *testing.T, text string) {
	t.Helper()
	if strings.ContainsAny(text, "<>") || regexp.MustCompile(`&($|[^agl]|a[^m]|l[^t]|g[^t])`).MatchString(text) {
		t.Fatalf("Slack would parse this:\n%s", text)
	}
	if !strings.Contains(text, "&lt;!channel&gt; @here see &lt;http://evil.example|runbook&gt; *now* &amp; `x`") {
		t.Fatalf("the reason is not in the message, escaped:\n%s", text)
	}
}

func noSecret(t *testing.T, what string, r clitest.Result) {
	t.Helper()
	if strings.Contains(r.Stdout+r.Stderr, "SECRET") {
		t.Fatalf("%s: the webhook token leaks:\nstdout: %s\nstderr: %s", what, r.Stdout, r.Stderr)
	}
}

// auditID is the audit id a command's -o json result names.
func auditIDs(t *testing.T, stdout string) []string {
	t.Helper()
	var res struct {
		AuditID string `json:"audit_id"`
		Results []struct {
			AuditID string `json:"audit_id"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	ids := []string{}
	if res.AuditID != "" {
		ids = append(ids, res.AuditID)
	}
	for _, r := range res.Results {
		if r.AuditID != "" {
			ids = append(ids, r.AuditID)
		}
	}
	return ids
}

// Every mutating command sends one notification to each sink, after its
// audit record: naming the context, the actor, the reason, the levers with
// their expiry and the audit ids, escaped for Slack in the slack form.
func TestEveryMutatingCommandNotifiesOnceEscaped(t *testing.T) {
	e := clitest.New(t)
	chat := notifytest.Start(t, notifytest.Accept)
	hook := notifytest.Start(t, notifytest.Accept)
	t.Setenv("KOSHA_TEST_HOOK", hook.URL())
	e.WriteConfig(localConfig("", slackSink("chat", chat.URL()), jsonSinkEnv("hook", "KOSHA_TEST_HOOK")))

	steps := []struct {
		action string
		args   []string
		expiry bool
	}{
		{"breaker.force-open", []string{"breaker", "force-open", "openai", "core-api", "--reason", hostile, "--for", "30m"}, true},
		{"breaker.clear", []string{"breaker", "clear", "openai", "core-api", "--reason", hostile}, false},
		{"ratelimit.drain", []string{"ratelimit", "drain", "--create", "client-7", "--for", "5m", "--reason", hostile}, true},
		{"ratelimit.set", []string{"ratelimit", "set", "--create", "client-7", "--tokens", "3", "--reason", hostile}, false},
		{"ratelimit.reset", []string{"ratelimit", "reset", "client-7", "--reason", hostile}, false},
		{"chaos.key-rotate", []string{"chaos", "key", "rotate"}, false},
	}
	for i, st := range steps {
		r := e.MustRun(0, append(st.args, "-o", "json")...)
		noSecret(t, st.action, r)
		if n := len(chat.Requests()); n != i+1 {
			t.Fatalf("%s: chat got %d notifications in all, want %d", st.action, n, i+1)
		}
		evs := hook.Events(t)
		if len(evs) != i+1 {
			t.Fatalf("%s: hook got %d notifications in all, want %d", st.action, len(evs), i+1)
		}
		ev := evs[i]
		want := auditIDs(t, r.Stdout)
		if ev.Action != st.action || ev.Context != "dev" || ev.Actor != "tester@test" || ev.Source != notify.SourceCLI ||
			strings.Join(ev.AuditIDs, ",") != strings.Join(want, ",") || len(want) == 0 {
			t.Fatalf("%s: event %+v, want audit ids %v", st.action, ev, want)
		}
		if st.action != "chaos.key-rotate" && ev.Reason != hostile {
			t.Fatalf("%s: reason %q", st.action, ev.Reason)
		}
		if (ev.Levers[0].ExpiresAt != nil) != st.expiry {
			t.Fatalf("%s: lever %+v, expiry wanted: %v", st.action, ev.Levers[0], st.expiry)
		}
		text := chat.SlackTexts(t)[i]
		if st.action != "chaos.key-rotate" {
			slackSafe(t, text)
		}
		if !strings.Contains(text, "[dev] "+st.action+" by tester@test") {
			t.Fatalf("%s: slack text:\n%s", st.action, text)
		}
	}
	// A command that changes nothing, and a dry run, announce nothing.
	e.MustRun(0, "breaker", "clear", "openai", "--reason", "again")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "r", "--dry-run")
	if n := len(chat.Requests()); n != len(steps) {
		t.Fatalf("a no-op or dry run notified: %d notifications", n)
	}
}

// A sink that refuses prints one line on stderr, the change stands (exit
// 0) and a notify.failed audit record names the change's audit id.
func TestAFailingSinkPrintsOneLineAndTheChangeExitsZero(t *testing.T) {
	e := clitest.New(t)
	bad := notifytest.Start(t, notifytest.Refuse)
	good := notifytest.Start(t, notifytest.Accept)
	e.WriteConfig(localConfig("", slackSink("bad", bad.URL()), slackSink("good", good.URL())))
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", hostile, "-o", "json")
	noSecret(t, "force-open", r)
	var warns []string
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.Contains(l, "notification") {
			warns = append(warns, l)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "to bad (webhook http://127.0.0.1:") || !strings.Contains(warns[0], "answered 500") {
		t.Fatalf("stderr warnings = %q\nstderr: %s", warns, r.Stderr)
	}
	if len(good.Requests()) != 1 {
		t.Fatal("the good sink was not notified")
	}
	id := auditIDs(t, r.Stdout)[0]
	a := e.MustRun(0, "audit", "list", "--action", notify.ActionFailed, "-o", "json")
	noSecret(t, "audit list", a)
	if !strings.Contains(a.Stdout, id) || !strings.Contains(a.Stdout, `"sink": "bad"`) {
		t.Fatalf("no notify.failed record naming %s:\n%s", id, a.Stdout)
	}
}

// A receiver that never answers holds the command for the bound and no
// longer: the command waits on the (fake) clock, returns when it reaches
// the context's notify-timeout, and exits 0.
func TestAHangingReceiverDelaysTheCommandNoLongerThanTheBound(t *testing.T) {
	e := clitest.New(t)
	hang := notifytest.Start(t, notifytest.Hang)
	e.WriteConfig(localConfig("    notify-timeout: 2s\n", slackSink("stuck", hang.URL())))
	done := make(chan clitest.Result, 1)
	go func() { done <- e.Run("breaker", "force-open", "openai", "--reason", "r") }()
	hang.WaitRequest(t)
	wait.Until(t, "the command to wait on its clock", func() bool { return e.Clock.Waiters() > 0 })
	select {
	case r := <-done:
		t.Fatalf("the command returned before the bound: %+v", r)
	default:
	}
	e.Clock.Advance(2 * time.Second)
	var r clitest.Result
	select {
	case r = <-done:
	case <-time.After(wait.Ceiling):
		t.Fatal("the command did not return at the bound")
	}
	if r.Code != 0 || !strings.Contains(r.Stderr, "no answer within 2s") || !strings.Contains(r.Stdout, "Forced open openai") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
}

// closedPipe is a stdout whose reader has gone (koshactl ... | head -0).
type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// A change is announced once it is written, even when its result cannot be
// printed: the operator's stdout going away does not hide it from the
// channel.
func TestAChangeWhoseResultCannotBePrintedIsStillAnnounced(t *testing.T) {
	e := clitest.New(t)
	rcv := notifytest.Start(t, notifytest.Accept)
	e.WriteConfig(localConfig("", slackSink("chat", rcv.URL())))
	e.Out = closedPipe{}
	for _, args := range [][]string{
		{"breaker", "force-open", "openai", "--reason", "r", "-o", "json"},
		{"breaker", "clear", "openai", "--reason", "r", "-o", "json"},
		{"ratelimit", "drain", "--create", "c", "--reason", "r", "-o", "json"},
	} {
		if r := e.Run(args...); r.Code == 0 {
			t.Fatalf("%v with a closed stdout exited 0", args)
		}
	}
	e.Out = nil
	if n := len(rcv.Requests()); n != 3 {
		t.Fatalf("%d notifications for three changes written, want 3", n)
	}
	if out := e.MustRun(0, "audit", "list", "-o", "json"); strings.Count(out.Stdout, `"action": "breaker.`)+strings.Count(out.Stdout, `"action": "ratelimit.`) != 3 {
		t.Fatalf("the three changes are not all recorded:\n%s", out.Stdout)
	}
}

func TestNoNotifyOnlyWhereTheContextAllowsIt(t *testing.T) {
	e := clitest.New(t)
	rcv := notifytest.Start(t, notifytest.Accept)
	e.WriteConfig(localConfig("", slackSink("chat", rcv.URL())))
	r := e.MustRun(exitcode.Usage, "breaker", "force-open", "openai", "--reason", "r", "--no-notify")
	if !strings.Contains(r.Stderr, "does not allow skipping") {
		t.Fatalf("stderr: %s", r.Stderr)
	}
	if out := e.MustRun(0, "breaker", "list", "-o", "json"); strings.Contains(out.Stdout, "openai") {
		t.Fatal("a refused --no-notify still forced the breaker")
	}
	e.WriteConfig(localConfig("    allow-no-notify: true\n", slackSink("chat", rcv.URL())))
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "r", "--no-notify")
	e.MustRun(0, "ratelimit", "drain", "--create", "c", "--reason", "r", "--no-notify")
	if n := len(rcv.Requests()); n != 0 {
		t.Fatalf("--no-notify still notified %d times", n)
	}
}

func TestDebugAndConfigViewNeverShowTheToken(t *testing.T) {
	e := clitest.New(t)
	rcv := notifytest.Start(t, notifytest.Accept)
	e.WriteConfig(localConfig("", slackSink("chat", rcv.URL())))
	r := e.MustRun(0, "--debug", "breaker", "force-open", "openai", "--reason", "r")
	noSecret(t, "--debug", r)
	if !strings.Contains(r.Stderr, "notify: chat (webhook http://127.0.0.1:") || !strings.Contains(r.Stderr, "/…): delivered") {
		t.Fatalf("--debug says nothing of the delivery:\n%s", r.Stderr)
	}
	for _, format := range []string{"yaml", "json"} {
		v := e.MustRun(0, "config", "view", "-o", format)
		noSecret(t, "config view", v)
		if !strings.Contains(v.Stdout, "http://127.0.0.1:") {
			t.Fatalf("config view hides the sink entirely:\n%s", v.Stdout)
		}
	}
}

func TestSetContextNotifyFlagsValidateAndNeverEchoTheURL(t *testing.T) {
	e := clitest.New(t)
	secretURL := "https://hooks.example.com" + notifytest.Token
	r := e.MustRun(0, "config", "set-context", "ops", "--local", "--notify-webhook", secretURL, "--notify-format", "slack",
		"--notify-sns", "arn:aws:sns:eu-west-1:123456789012:incidents", "--notify-timeout", "3s", "--allow-no-notify")
	noSecret(t, "set-context", r)
	// Adding the same sink again keeps one.
	e.MustRun(0, "config", "set-context", "ops", "--notify-webhook", secretURL, "--notify-format", "slack")
	data, err := os.ReadFile(e.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), notifytest.Token) != 1 || !strings.Contains(string(data), "format: slack") ||
		!strings.Contains(string(data), "topic-arn: arn:aws:sns:eu-west-1:123456789012:incidents") || !strings.Contains(string(data), "notify-timeout: 3s") {
		t.Fatalf("config file:\n%s", data)
	}
	for _, bad := range [][]string{
		{"--notify-webhook", "http://hooks.example.com" + notifytest.Token},
		{"--notify-webhook", "ftp://x" + notifytest.Token},
		{"--notify-sns", "arn:aws:sqs:us-east-1:123456789012:q"},
		{"--notify-format", "teams"},
		{"--notify-timeout", "1m"},
	} {
		r := e.MustRun(exitcode.Usage, append([]string{"config", "set-context", "ops"}, bad...)...)
		noSecret(t, strings.Join(bad, " "), r)
	}
	// The file is checked when it is loaded, too.
	e.WriteConfig(localConfig("", "      - webhook:\n          url: http://evil.example"+notifytest.Token+"\n"))
	r = e.MustRun(exitcode.Usage, "breaker", "list")
	noSecret(t, "load", r)
	if !strings.Contains(r.Stderr, "notify[0]") || !strings.Contains(r.Stderr, "https://") {
		t.Fatalf("stderr: %s", r.Stderr)
	}
}

// drill run from the command line: the run is announced when its steps
// begin and when it has rolled back, from the drill, with the context's
// sinks.
func TestDrillRunIsAnnounced(t *testing.T) {
	e := clitest.New(t)
	rcv := notifytest.Start(t, notifytest.Accept)
	e.WriteConfig(localConfig("", slackSink("chat", rcv.URL())))
	file := e.Dir + "/drill.yaml"
	if err := os.WriteFile(file, []byte("name: throttle\ntimeout: 1m\nsteps:\n  - ratelimit.drain: {client: agent-1, for: 30s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.MustRun(0, "drill", "run", file)
	noSecret(t, "drill run", r)
	texts := rcv.SlackTexts(t)
	if len(texts) != 2 || !strings.Contains(texts[0], "[dev] drill.started by tester@test: drill throttle") ||
		!strings.Contains(texts[1], "drill.finished") || !strings.Contains(texts[1], "Lever: rl#agent-1 moved by the drill, rolled back") ||
		!strings.Contains(texts[1], "(from the drill)") {
		t.Fatalf("notifications:\n%s", strings.Join(texts, "\n---\n"))
	}
}

// A webhook's url-env is read from the command's environment (the
// factory's Environ), not the process's: a parallel test's CLI finds the
// URL it was given, and a variable only the process has is not used.
func TestWebhookURLEnvIsTheCommandsEnvironment(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	hook := notifytest.Start(t, notifytest.Accept)
	e.Setenv("KOSHA_PARALLEL_HOOK", hook.URL())
	e.WriteConfig(localConfig("", jsonSinkEnv("hook", "KOSHA_PARALLEL_HOOK")))
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "incident", "--for", "30m")
	if evs := hook.Events(t); len(evs) != 1 || evs[0].Action != "breaker.force-open" {
		t.Fatalf("the hook got %+v, want one breaker.force-open\nstderr:\n%s", evs, r.Stderr)
	}
}
