package request_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
)

// walkthrough is the page a newcomer follows to try four eyes on the
// embedded store.
const walkthrough = "../../../docs/four-eyes-walkthrough.md"

// expectedExit is a line's "# exit N" comment: the code it exits with on
// purpose.
var expectedExit = regexp.MustCompile(`#\s*exit (\d+)\b[^'"]*$`)

// walkthroughScript is the page's sh blocks as one bash script, each
// command (continued lines joined) followed by the check of its exit code:
// the one its "# exit N" comment names, else 0.
func walkthroughScript(t *testing.T, doc string) (string, int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("set -u\n")
	commands, in := 0, false
	var pending []string
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in = true
			continue
		case in && strings.TrimSpace(line) == "```":
			if len(pending) > 0 {
				t.Fatalf("%s:%d: a block ends inside a continued command", walkthrough, i+1)
			}
			in = false
			continue
		case !in:
			continue
		}
		pending = append(pending, line)
		if strings.HasSuffix(line, `\`) {
			continue
		}
		cmd := strings.Join(pending, "\n")
		pending = nil
		if strings.TrimSpace(cmd) == "" {
			continue
		}
		want := "0"
		if m := expectedExit.FindStringSubmatch(line); m != nil {
			want = m[1]
		}
		commands++
		fmt.Fprintf(&b, "%s\n__rc=$?; if [ \"$__rc\" != %s ]; then echo \"walk-through line %d exited $__rc, want %s\" >&2; exit 97; fi\n",
			cmd, want, i+1, want)
	}
	// What the page left behind, for the checks below.
	b.WriteString(`koshactl audit list -o json > "$WALK_OUT/audit.json" || exit 98` + "\n")
	return b.String(), commands
}

// The four-eyes walk-through runs as written, on the race-built binary
// and the built-in local context: every command exits as the page says,
// and the records show each person's part (the demo identities as
// actor_source demo), the approvals, the break-glass and the agent's
// approved proposal, and the way back.
func TestFourEyesWalkthroughAsWritten(t *testing.T) {
	t.Parallel()
	bin := koshabin.Path(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("the walk-through is bash: %v", err)
	}
	doc, err := os.ReadFile(walkthrough)
	if err != nil {
		t.Fatal(err)
	}
	script, commands := walkthroughScript(t, string(doc))
	if commands < 30 {
		t.Fatalf("the walk-through has %d commands: its sh blocks were not found", commands)
	}
	// The page runs from the repository's root with ./bin on PATH: here a
	// directory whose docs are the repository's and whose bin is the
	// binary under test.
	root, out := t.TempDir(), t.TempDir()
	docs, err := filepath.Abs("../../../docs")
	if err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"docs": docs, "bin": filepath.Dir(bin)} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(out, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + out, "TMPDIR=" + tmp, "KOSHACTL_CONFIG=" + filepath.Join(out, "config.yaml"), "NO_COLOR=1", "WALK_OUT=" + out}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KOSHACTL_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") &&
			!strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	cmd := exec.CommandContext(t.Context(), bash, "--noprofile", "--norc", "-c", script) //nolint:gosec // G204: the repository's own walk-through
	cmd.Dir, cmd.Env = root, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the walk-through as written: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	for _, want := range []string{
		"not a security boundary",                   // every demo identity's command says what it is
		"four eyes: someone else must do it",        // alice approving her own
		"is not verified by STS",                    // the unverified approval
		"approve as a demo identity",                // ... says how to try it here
		"no policy permits a break-glass",           // bob is no operator
		"Proposed, not applied: change request",     // the agent's proposal
		"acted on context \"local\" (sqlite " + tmp, // the throwaway store of the built-in local context
	} {
		if !strings.Contains(stdout.String()+stderr.String(), want) {
			t.Errorf("the walk-through's output lacks %q\nstdout:\n%s\nstderr:\n%s", want, stdout.String(), stderr.String())
		}
	}
	for _, want := range []string{
		"Approval:    approved by arn:aws:sts::000000000000:assumed-role/approver/bob", // breaker get names the approver
		"Comment:     arn:aws:sts::000000000000:assumed-role/approver/bob: status page confirms the incident",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the walk-through's stdout lacks %q:\n%s", want, stdout.String())
		}
	}

	raw, err := os.ReadFile(filepath.Join(out, "audit.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs struct {
		Items []audit.Record `json:"items"`
	}
	if err := json.Unmarshal(raw, &recs); err != nil {
		t.Fatal(err)
	}
	const demo = "arn:aws:sts::000000000000:assumed-role/"
	var got []string
	for i, r := range slices.Backward(recs.Items) { // oldest first; the last clear is the reader's own, unverified
		if r.ActorSource != audit.ActorDemo && i != 0 {
			t.Errorf("record %s %s by %s: actor_source %q, want demo", r.Action, r.Subject, r.Actor, r.ActorSource)
		}
		line := r.Action + " " + r.Subject + " by " + strings.TrimPrefix(r.Actor, demo)
		if a := r.Approval; a != nil && a.Decision != audit.DecisionAllowed {
			line += " " + a.Decision
			if a.Decision == audit.DecisionApproved {
				line += " asked by " + strings.TrimPrefix(a.Requester, demo) + " approved by " + strings.TrimPrefix(strings.Join(a.Approvers, ","), demo)
			}
		}
		if r.Source != "" {
			line += " via " + r.Source
		}
		got = append(got, line)
	}
	want := []string{
		"policy.set policy#table by admin/dana",
		"request.create request#* by operator/alice",
		"breaker.force-open breaker#openai by approver/bob approved asked by operator/alice approved by approver/bob",
		"breaker.clear breaker#openai by operator/alice break-glass",
		"review.ack review#* by approver/bob",
		"request.create request#* by requester/agent via mcp",
		"breaker.force-open breaker#screening-sim by approver/bob approved asked by requester/agent approved by approver/bob",
		"policy.set policy#table by admin/dana",
		"breaker.clear breaker#screening-sim by " + "*",
	}
	if len(got) != len(want) {
		t.Fatalf("the walk-through's records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if ok, _ := filepath.Match(want[i], got[i]); !ok {
			t.Errorf("record %d: %q, want %q", i, got[i], want[i])
		}
	}
}
