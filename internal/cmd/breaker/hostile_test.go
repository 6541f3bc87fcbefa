package breaker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// What a hostile writer of the table puts in an override (issue 12): a
// screen clear, a clipboard write, a carriage return that overwrites the
// line, and a right-to-left override; and an actor that retitles the window.
const (
	hostileReason = "wipe\x1b[2J copy\x1b]52;c;cm0gLXJmIH4=\x07 ok\rFORGED txt\u202eexe"
	hostileActor  = "eve\x1b]0;title\x07"
)

// How they must read on a terminal.
var hostileShown = []string{`wipe\x1b[2J copy\x1b]52;c;cm0gLXJmIH4=\x07 ok\rFORGED txt\u202eexe`, `eve\x1b]0;title\x07`}

// seedHostileOverride writes the override and its audit record with the
// store API, as another tool would, into the local context's embedded store.
func seedHostileOverride(t *testing.T, e *clitest.Env) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(e.StateDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Reason: hostileReason, Actor: hostileActor,
		CreatedAt: clitest.Epoch, ExpiresAt: clitest.Epoch.Add(time.Hour), Version: 1}
	if err := s.Put(ctx, o.Item(), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.NewLog(s, e.Clock, "local").Append(ctx, audit.Entry{Actor: hostileActor, Action: "breaker.force-open",
		Subject: breaker.OverrideKey("openai") + "\x1b[8m", Reason: hostileReason, Outcome: "ok\u2066"}); err != nil {
		t.Fatal(err)
	}
}

// assertShown checks one command's streams byte by byte: nothing a terminal
// acts on, and the hostile values shown as escapes where they are printed.
func assertShown(t *testing.T, what string, r clitest.Result, wantOut, wantErr []string) {
	t.Helper()
	termtest.AssertSafe(t, what+" stdout", r.Stdout)
	termtest.AssertSafe(t, what+" stderr", r.Stderr)
	for _, w := range wantOut {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("%s: stdout does not show %q:\n%s", what, w, r.Stdout)
		}
	}
	for _, w := range wantErr {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("%s: stderr does not show %q:\n%s", what, w, r.Stderr)
		}
	}
}

func TestHostileOverrideNeverReachesTheTerminalRaw(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			e := clitest.New(t, clitest.Parallel())
			gauges := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				// A gauge source is an HTTP answer: its label values are data too.
				fmt.Fprint(w, "kosha_breaker_state{dependency=\"openai\",instance=\"gw-1\u202e\"} 3\n"+
					"kosha_breaker_state{dependency=\"openai\",instance=\"gw\x1b[2J-2\"} 3\n")
			}))
			t.Cleanup(gauges.Close)
			e.WriteConfig(fmt.Sprintf("contexts:\n  local:\n    store:\n      local: {}\n    metrics:\n      prometheus:\n        url: %s\n", gauges.URL))
			e.MustRun(0, "breaker", "list") // creates the store
			seedHostileOverride(t, e)
			e.TTY = tty

			assertShown(t, "breaker list", e.MustRun(0, "breaker", "list"), hostileShown, nil)
			r := e.MustRun(0, "breaker", "get", "openai")
			assertShown(t, "breaker get", r, []string{"Reason:      " + hostileShown[0] + "\n", "Actor:       " + hostileShown[1] + "\n"}, nil)
			assertShown(t, "breaker status", e.MustRun(0, "breaker", "status"), hostileShown, nil)
			assertShown(t, "audit list", e.MustRun(0, "audit", "list"), append([]string{`breaker#openai\x1b[8m`, `ok\u2066`}, hostileShown...), nil)

			// The conflict names the holder on stderr.
			r = e.MustRun(exitcode.Conflict, "breaker", "force-open", "openai", "--reason", "mine now")
			assertShown(t, "force-open conflict", r, nil, []string{hostileShown[1]})
			r = e.MustRun(0, "breaker", "force-open", "openai", "--reason", "mine now", "--overwrite")
			assertShown(t, "force-open --overwrite", r, []string{"previously forced by " + hostileShown[1] + ": " + hostileShown[0]}, nil)
			assertShown(t, "audit list after", e.MustRun(0, "audit", "list"), hostileShown, nil)
		})
	}
}

// A newline or tab in a stored value cannot add a row or a column.
func TestStoredNewlineCannotForgeATableRow(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "list")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(e.StateDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	o := breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Reason: "x\npostgres\tforced_open\tnever",
		Actor: "a\tb", CreatedAt: clitest.Epoch, Version: 1}
	if err := s.Put(ctx, o.Item(), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	out := e.MustRun(0, "breaker", "list").Stdout
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 2 || strings.Contains(out, "\t") {
		t.Errorf("one override must be one row:\n%s", out)
	}
	if !strings.Contains(out, `a\tb`) || !strings.Contains(out, `x\npostgres\tforced_open\tnever`) {
		t.Errorf("the newline and tabs are not shown as escapes:\n%s", out)
	}
}

// -o json and -o yaml keep every stored character exactly.
func TestHostileOverrideRoundTripsExactlyInJSONAndYAML(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "list")
	seedHostileOverride(t, e)
	for _, format := range []string{"json", "yaml"} {
		r := e.MustRun(0, "breaker", "get", "openai", "-o", format)
		termtest.AssertSafe(t, "get -o "+format, r.Stdout)
		var v view
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(r.Stdout), &v)
		} else {
			var m map[string]any
			if err = yaml.Unmarshal([]byte(r.Stdout), &m); err == nil {
				v.Reason, _ = m["reason"].(string)
				v.Actor, _ = m["actor"].(string)
			}
		}
		if err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, r.Stdout)
		}
		if v.Reason != hostileReason || v.Actor != hostileActor {
			t.Errorf("-o %s changed the values: reason %q actor %q", format, v.Reason, v.Actor)
		}
	}
}

// Operator input follows the same rule: refused, exit 2, nothing written.
func TestReasonAndActorAreRefusedByTheSameRule(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, c := range []struct {
		reason, want string
	}{
		{"provider\u202eincident", `reason has a bidi control (\u202e) at character 9`},
		{"ok\x1b]0;t\x07", `reason has a control character (\x1b) at character 3`},
		{"a\rb", `reason has a control character (\r) at character 2`},
		{strings.Repeat("é", 501), "reason is 501 characters"},
	} {
		r := e.MustRun(exitcode.Usage, "breaker", "force-open", "openai", "--reason", c.reason)
		assertShown(t, "force-open --reason", r, nil, []string{c.want})
		if n := strings.Count(r.Stderr, "\n"); n != 1 {
			t.Errorf("want a one-line error, got %d lines:\n%s", n, r.Stderr)
		}
	}
	// 400 accented characters are 400 characters (800 bytes): accepted.
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", strings.Repeat("é", 400), "--for", "30m")

	e.Setenv("KOSHACTL_ACTOR", "eve\x1b]0;title\x07")
	r := e.MustRun(exitcode.Usage, "breaker", "force-open", "postgres", "--reason", "x", "--for", "30m")
	assertShown(t, "bad actor", r, nil, []string{`$KOSHACTL_ACTOR: actor "eve\x1b]0;title\x07" has a control character (\x1b) at character 4`})
	if out := e.MustRun(0, "breaker", "list").Stdout; strings.Contains(out, "postgres") {
		t.Errorf("a refused actor wrote an override:\n%s", out)
	}
}
