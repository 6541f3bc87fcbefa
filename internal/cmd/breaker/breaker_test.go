package breaker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

type view struct {
	Dependency       string  `json:"dependency"`
	State            string  `json:"state"`
	Active           bool    `json:"active"`
	Reason           string  `json:"reason"`
	Actor            string  `json:"actor"`
	CreatedAt        *string `json:"created_at"`
	ExpiresAt        *string `json:"expires_at"`
	ExpiresInSeconds *int64  `json:"expires_in_seconds"`
	Version          int64   `json:"version"`
}

func TestForceOpenThenListGetClearAudit(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	e.Clock.Advance(time.Second)
	if !strings.Contains(r.Stdout, "Forced open openai") || !strings.Contains(r.Stdout, "provider incident") {
		t.Errorf("force-open output does not say what happened:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stderr, `acted on context "local"`) || !strings.Contains(r.Stderr, "sqlite") {
		t.Errorf("force-open must name the context and store it acted on, stderr:\n%s", r.Stderr)
	}

	got := clitest.Decode[view](t, e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout)
	if !got.Active || got.State != "forced_open" || got.Actor != "tester@test" || got.Version != 1 {
		t.Errorf("get after force-open = %+v", got)
	}
	if got.ExpiresAt == nil || *got.ExpiresAt != "2026-11-29T19:30:00.000Z" || *got.ExpiresInSeconds != 1799 {
		t.Errorf("expiry = %v (in %v s), want 19:30 in 1799 s", got.ExpiresAt, got.ExpiresInSeconds)
	}

	list := clitest.Decode[struct {
		Kind    string `json:"kind"`
		Context string `json:"context"`
		Items   []view `json:"items"`
	}](t, e.MustRun(0, "breaker", "list", "-o", "json").Stdout)
	if list.Kind != "BreakerOverrideList" || list.Context != "local" || len(list.Items) != 1 || list.Items[0].Dependency != "openai" {
		t.Errorf("list = %+v", list)
	}
	table := e.MustRun(0, "breaker", "list").Stdout
	if !strings.Contains(table, "DEPENDENCY") || !strings.Contains(table, "2026-11-29T19:30:00Z") {
		t.Errorf("off a terminal the table shows RFC3339 times:\n%s", table)
	}

	r = e.MustRun(0, "breaker", "clear", "openai", "--reason", "recovered")
	if !strings.Contains(r.Stdout, "Cleared override on openai") {
		t.Errorf("clear output:\n%s", r.Stdout)
	}
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")

	recs := clitest.Decode[struct {
		Items []struct {
			Actor   string          `json:"actor"`
			Action  string          `json:"action"`
			Subject string          `json:"subject"`
			Reason  string          `json:"reason"`
			Context string          `json:"context"`
			Before  json.RawMessage `json:"before"`
			After   json.RawMessage `json:"after"`
		} `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "-o", "json").Stdout)
	if len(recs.Items) != 2 {
		t.Fatalf("audit has %d records, want 2: %+v", len(recs.Items), recs)
	}
	clearRec, force := recs.Items[0], recs.Items[1]
	if force.Action != "breaker.force-open" || force.Subject != "breaker#openai" || force.Reason != "provider incident" ||
		force.Actor != "tester@test" || force.Context != "local" || len(force.After) == 0 || len(force.Before) != 0 {
		t.Errorf("force audit record = %+v", force)
	}
	if clearRec.Action != "breaker.clear" || clearRec.Reason != "recovered" || len(clearRec.Before) == 0 || len(clearRec.After) != 0 {
		t.Errorf("clear audit record = %+v", clearRec)
	}
	only := e.MustRun(0, "audit", "list", "--subject", "breaker#core-api").Stdout
	if !strings.Contains(only, "No audit records") {
		t.Errorf("--subject filter leaked records:\n%s", only)
	}
}

func TestForceOpenConflictShowsHolderAndOverwriteReplaces(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "first")
	e.Setenv("KOSHACTL_ACTOR", "bob@test")
	r := e.MustRun(exitcode.Conflict, "breaker", "force-open", "openai", "--reason", "second")
	for _, want := range []string{"tester@test", `"first"`, "--overwrite"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("conflict error lacks %q: %s", want, r.Stderr)
		}
	}
	if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n != 0 {
		t.Errorf("error is %d lines, want one: %q", n+1, r.Stderr)
	}
	got := clitest.Decode[view](t, e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout)
	if got.Reason != "first" {
		t.Fatalf("a refused force changed the override: %+v", got)
	}
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "second", "--overwrite")
	got = clitest.Decode[view](t, e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout)
	if got.Reason != "second" || got.Actor != "bob@test" || got.Version != 2 {
		t.Errorf("after --overwrite: %+v", got)
	}
}

func TestForceOpenOverExpiredOverrideNeedsNoOverwrite(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "short", "--for", "1m")
	e.Clock.Advance(61 * time.Second)
	if out := e.MustRun(0, "breaker", "list").Stdout; !strings.Contains(out, "expired") {
		t.Errorf("an expired override should list as expired:\n%s", out)
	}
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "again")
	got := clitest.Decode[view](t, e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout)
	if !got.Active || got.Version != 2 || got.Reason != "again" {
		t.Errorf("re-force over an expired override: %+v", got)
	}
}

func TestClearIsIdempotent(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(0, "breaker", "clear", "openai")
	if !strings.Contains(r.Stdout, "not forced open") {
		t.Errorf("clearing nothing should say so: %s", r.Stdout)
	}
	out := clitest.Decode[struct {
		Results []struct{ Action string } `json:"results"`
	}](t, e.MustRun(0, "breaker", "clear", "openai", "-o", "json").Stdout)
	if len(out.Results) != 1 || out.Results[0].Action != "already-clear" {
		t.Errorf("json clear of nothing: %+v", out)
	}
	if recs := e.MustRun(0, "audit", "list").Stdout; !strings.Contains(recs, "No audit records") {
		t.Errorf("a clear that changed nothing must not be audited:\n%s", recs)
	}
}

// TestClearRefusesATypo: issue 21. clear open-ai with openai forced printed
// "nothing to clear" and exited 0; it applies force-open's known-dependency
// rule now, and an unknown name with a stored override stays clearable.
func TestClearRefusesATypo(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "incident")
	for _, args := range [][]string{{"open-ai"}, {"openai", "open-ai"}, {"open-ai", "--dry-run"}} {
		r := e.MustRun(exitcode.Usage, append([]string{"breaker", "clear"}, args...)...)
		if !strings.Contains(r.Stderr, `did you mean "openai"`) || !strings.Contains(r.Stderr, "--allow-unknown") {
			t.Errorf("clear %v: stderr %q lacks the suggestion and the way past it", args, r.Stderr)
		}
		if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || r.Stdout != "" {
			t.Errorf("clear %v: not a one-line error: stdout %q stderr %q", args, r.Stdout, r.Stderr)
		}
	}
	if got := clitest.Decode[view](t, e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout); !got.Active {
		t.Fatalf("a refused clear removed openai's override: %+v", got)
	}
	if r := e.MustRun(0, "breaker", "clear", "open-ai", "--allow-unknown"); !strings.Contains(r.Stdout, "nothing to clear") {
		t.Errorf("clear --allow-unknown of a name with no override: %s", r.Stdout)
	}
	e.MustRun(0, "breaker", "force-open", "legacy-svc", "--reason", "old", "--allow-unknown")
	if r := e.MustRun(0, "breaker", "clear", "legacy-svc"); !strings.Contains(r.Stdout, "Cleared override on legacy-svc") {
		t.Errorf("an unknown name whose override is stored must clear without --allow-unknown: %s", r.Stdout)
	}
}

func TestClearAll(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "postgres", "--reason", "drill")
	dry := e.MustRun(0, "breaker", "clear", "--all", "--dry-run").Stdout
	if strings.Count(dry, "Would clear") != 2 {
		t.Errorf("dry run:\n%s", dry)
	}
	if out := e.MustRun(0, "breaker", "list", "--active").Stdout; strings.Count(out, "forced_open") != 2 {
		t.Fatalf("--dry-run wrote something:\n%s", out)
	}
	e.MustRun(0, "breaker", "clear", "--all")
	if out := e.MustRun(0, "breaker", "list").Stdout; !strings.Contains(out, "No breaker overrides") {
		t.Errorf("after clear --all:\n%s", out)
	}
	e.MustRun(exitcode.Usage, "breaker", "clear", "--all", "openai")
	e.MustRun(exitcode.Usage, "breaker", "clear")
}

func TestForceOpenDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "x", "--dry-run", "-o", "json")
	if !strings.Contains(r.Stderr, `dry run, nothing written; would act on context "local"`) {
		t.Errorf("-o json should still name the context on stderr: %q", r.Stderr)
	}
	out := clitest.Decode[struct {
		DryRun  bool `json:"dry_run"`
		Results []struct {
			Action   string `json:"action"`
			Override view   `json:"override"`
		} `json:"results"`
	}](t, r.Stdout)
	if !out.DryRun || len(out.Results) != 1 || out.Results[0].Action != "would-force" || out.Results[0].Override.Reason != "x" {
		t.Errorf("dry run result: %+v", out)
	}
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")
	if recs := e.MustRun(0, "audit", "list").Stdout; !strings.Contains(recs, "No audit records") {
		t.Errorf("a dry run must not be audited:\n%s", recs)
	}
}

func TestForceOpenBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no reason", []string{"openai"}, exitcode.Usage, "reason is required"},
		{"blank reason", []string{"openai", "--reason", "  "}, exitcode.Usage, "reason is required"},
		{"multi-line reason", []string{"openai", "--reason", "a\nb"}, exitcode.Usage, "control character"},
		{"typo", []string{"open-ai", "--reason", "x"}, exitcode.Usage, `did you mean "openai"`},
		{"bad name", []string{"OpenAI!", "--reason", "x"}, exitcode.Usage, "invalid dependency name"},
		{"negative for", []string{"openai", "--reason", "x", "--for", "-5m"}, exitcode.Usage, "not positive"},
		{"absurd for", []string{"openai", "--reason", "x", "--for", "9000h"}, exitcode.Usage, "max-override"},
		{"bad for", []string{"openai", "--reason", "x", "--for", "soon"}, exitcode.Usage, "invalid argument"},
		{"for under the cache period", []string{"openai", "--reason", "x", "--for", "1ns"}, exitcode.Usage, "1ns is under the 5s minimum"},
		{"for just under", []string{"openai", "--reason", "x", "--for", "4.999s"}, exitcode.Usage, "use --for 5s or more"},
		{"until under the cache period", []string{"openai", "--reason", "x", "--until", "2026-11-29T19:00:03Z"}, exitcode.Usage, "3s is under the 5s minimum"},
		{"past until", []string{"openai", "--reason", "x", "--until", "2020-01-01T00:00:00Z"}, exitcode.Usage, "in the past"},
		{"bad until", []string{"openai", "--reason", "x", "--until", "tomorrow"}, exitcode.Usage, "RFC3339"},
		{"for and until", []string{"openai", "--reason", "x", "--for", "1m", "--until", "2026-11-29T20:00:00Z"}, exitcode.Usage, "none of the others"},
		{"no-expiry without yes", []string{"openai", "--reason", "x", "--no-expiry"}, exitcode.Usage, "--yes"},
		{"one bad among good", []string{"openai", "open-ai", "--reason", "x"}, exitcode.Usage, "unknown dependency"},
		{"twice", []string{"openai", "openai", "--reason", "x"}, exitcode.Usage, "named twice"},
		{"no dependency", []string{"--reason", "x"}, exitcode.Usage, "requires at least 1 arg"},
		{"bad output", []string{"openai", "--reason", "x", "-o", "xml"}, exitcode.Usage, "unknown output format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := clitest.New(t, clitest.Parallel())
			r := e.MustRun(tc.code, append([]string{"breaker", "force-open"}, tc.args...)...)
			if !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("stderr %q lacks %q", r.Stderr, tc.want)
			}
			if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
				t.Errorf("error is not one line: %q", r.Stderr)
			}
			if r.Stdout != "" {
				t.Errorf("bad input printed to stdout: %q", r.Stdout)
			}
			if out := e.MustRun(0, "breaker", "list").Stdout; !strings.Contains(out, "No breaker overrides") {
				t.Errorf("bad input wrote an override:\n%s", out)
			}
		})
	}
}

func TestForceOpenForTheMinimumIsAccepted(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "x", "--for", breaker.MinOverride.String(), "-o", "json")
	if !strings.Contains(r.Stdout, `"expires_at": "2026-11-29T19:00:05.000Z"`) {
		t.Errorf("force-open --for %s:\n%s", breaker.MinOverride, r.Stdout)
	}
}

func TestAllowUnknownAndNoExpiry(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "billing", "--reason", "new dep", "--allow-unknown", "--no-expiry", "--yes")
	got := clitest.Decode[view](t, e.MustRun(0, "breaker", "get", "billing", "-o", "json").Stdout)
	if !got.Active || got.ExpiresAt != nil {
		t.Errorf("no-expiry override: %+v", got)
	}
	e.Clock.Advance(365 * 24 * time.Hour)
	if got := clitest.Decode[view](t, e.MustRun(0, "breaker", "get", "billing", "-o", "json").Stdout); !got.Active {
		t.Errorf("a no-expiry override lapsed")
	}
}

func TestProtectedContextNeedsConfirmation(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "config", "set-context", "prod", "--local", e.Dir+"/prod.db", "--protected", "--use")
	r := e.MustRun(exitcode.Refused, "breaker", "force-open", "openai", "--reason", "x")
	if !strings.Contains(r.Stderr, "protected") || !strings.Contains(r.Stderr, "--yes") {
		t.Errorf("refusal should name --yes: %s", r.Stderr)
	}
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")

	e.TTY, e.Stdin = true, "staging\n"
	e.MustRun(exitcode.Refused, "breaker", "force-open", "openai", "--reason", "x")
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")

	e.Stdin = "prod\n"
	r = e.MustRun(0, "breaker", "force-open", "openai", "--reason", "x")
	if !strings.Contains(r.Stderr, "PROTECTED") {
		t.Errorf("prompt not shown: %s", r.Stderr)
	}
	e.TTY, e.Stdin = false, ""
	e.MustRun(exitcode.Refused, "breaker", "clear", "openai")
	e.MustRun(0, "breaker", "clear", "openai", "--yes")
	// Reads need no confirmation.
	e.MustRun(0, "breaker", "list")
}

func TestUnknownContextIsNotFound(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(exitcode.NotFound, "--context", "nope", "breaker", "list")
	if !strings.Contains(r.Stderr, "known contexts are local") {
		t.Errorf("stderr: %s", r.Stderr)
	}
}

func TestYAMLOutputMatchesJSONSchema(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "postgres", "--reason", "maintenance")
	y := e.MustRun(0, "breaker", "get", "postgres", "-o", "yaml").Stdout
	for _, want := range []string{"dependency: postgres", "state: forced_open", "reason: maintenance", "expires_in_seconds: 3600"} {
		if !strings.Contains(y, want) {
			t.Errorf("yaml lacks %q:\n%s", want, y)
		}
	}
}

func TestCompletionOffersKnownDependencies(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	out := e.MustRun(0, "__complete", "breaker", "force-open", "openai", "").Stdout
	if !strings.Contains(out, "core-api") || strings.Contains(out, "openai") {
		t.Errorf("completion should offer the other known dependencies:\n%s", out)
	}
	if out := e.MustRun(0, "__complete", "--context", "").Stdout; !strings.Contains(out, "local") {
		t.Errorf("context completion:\n%s", out)
	}
}

func TestTerminalOutputShowsCountdowns(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "incident", "--for", "30m")
	e.Clock.Advance(5 * time.Minute)
	e.TTY = true
	out := e.MustRun(0, "breaker", "list").Stdout
	if !strings.Contains(out, "in 25m") || !strings.Contains(out, "5m ago") {
		t.Errorf("terminal table should count down:\n%s", out)
	}
}
