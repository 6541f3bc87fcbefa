package notifications_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/notify/snsfake"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// An SNS sink on a DynamoDB context: the client comes from the context's
// AWS settings (static credentials, its sns endpoint) in the topic's
// region, and the fake, which enforces Publish's limits, gets one message
// per command with the routing attributes.
func TestSNSSinkThroughTheContextsAWSSettings(t *testing.T) {
	topic := "arn:aws:sns:eu-west-1:123456789012:incidents"
	fake := snsfake.Start(t, topic)
	endpoint := moto.Start(t)
	e := clitest.New(t)
	e.MustRun(0, "config", "set-context", "dev", "--table", "kosha-control", "--region", moto.Region, "--endpoint-url", endpoint,
		"--static-credentials", "--service-endpoint", "sns="+fake.URL(), "--notify-sns", topic, "--use")
	e.MustRun(0, "store", "init")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", hostile, "--for", "10m")
	e.MustRun(0, "ratelimit", "drain", "--create", "client-7", "--reason", hostile)
	msgs := fake.Messages()
	if len(msgs) != 2 {
		t.Fatalf("the topic got %d messages, want 2", len(msgs))
	}
	for i, action := range []string{"breaker.force-open", "ratelimit.drain"} {
		m := msgs[i]
		if m.Attributes[notify.AttrAction].StringValue != action || m.Attributes[notify.AttrContext].StringValue != "dev" ||
			!strings.HasPrefix(m.Subject, "[dev] "+action+" by tester@test") {
			t.Fatalf("message %d: subject %q, attributes %+v", i, m.Subject, m.Attributes)
		}
		var cb struct {
			Content struct{ Description string }
		}
		if err := json.Unmarshal([]byte(m.Message), &cb); err != nil {
			t.Fatal(err)
		}
		slackSafe(t, cb.Content.Description)
	}
}

// The built binary, as an operator runs it: one escaped notification per
// command, no token on either stream, a refusing sink one warning line and
// exit 0.
func TestNotificationsFromTheBuiltBinary(t *testing.T) {
	dir := t.TempDir()
	bin := koshabin.Path(t)
	chat := notifytest.Start(t, notifytest.Accept)
	bad := notifytest.Start(t, notifytest.Refuse)
	cfg := filepath.Join(dir, "config.yaml")
	env := append(os.Environ(), "KOSHACTL_CONFIG="+cfg, "KOSHACTL_STATE_DIR="+filepath.Join(dir, "state"),
		"KOSHACTL_CONTEXT=", "KOSHACTL_ACTOR=ci@binary-test", "NO_COLOR=1", "KOSHA_BAD_HOOK="+bad.URL())
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...) //nolint:gosec // G204: the binary this test built
		cmd.Env = env
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			t.Fatalf("koshactl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, o.String(), e.String())
		}
		name := "koshactl " + strings.Join(args, " ")
		termtest.AssertSafe(t, name+" stdout", o.String())
		termtest.AssertSafe(t, name+" stderr", e.String())
		if strings.Contains(o.String()+e.String(), "SECRET") {
			t.Fatalf("%s: the token leaks:\n%s\n%s", name, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	run("config", "set-context", "dev", "--local", "--notify-webhook", chat.URL(), "--notify-format", "slack", "--use")
	run("breaker", "force-open", "openai", "--reason", hostile)
	run("breaker", "clear", "openai", "--reason", hostile)
	texts := chat.SlackTexts(t)
	if len(texts) != 2 {
		t.Fatalf("chat got %d notifications, want 2", len(texts))
	}
	for _, text := range texts {
		slackSafe(t, text)
	}
	run("config", "set-context", "dev", "--notify-webhook-env", "KOSHA_BAD_HOOK")
	_, stderr := run("ratelimit", "drain", "--create", "client-7", "--reason", hostile)
	if n := strings.Count(stderr, "warning: notification"); n != 1 || !strings.Contains(stderr, "answered 500") {
		t.Fatalf("want one warning line for the refusing sink:\n%s", stderr)
	}
	if len(chat.Requests()) != 3 {
		t.Fatal("the working sink missed the drain")
	}
}
