package breaker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// The end-to-end "hostile table": items written raw through the AWS
// SDK against moto, as `aws dynamodb put-item` would (raw attribute
// values, wrong types, control characters in every string, no index
// attributes), then the real binary's output checked byte by byte: no raw
// control byte on either stream, every malformed override flagged, the
// audit trail readable around a bad record, and one clear removes the
// corrupt override.
func TestHostileTableThroughTheRealBinary(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	dir := t.TempDir()
	bin := koshabin.Path(t)
	env := append(os.Environ(), "KOSHACTL_CONFIG="+filepath.Join(dir, "config.yaml"), "KOSHACTL_STATE_DIR="+filepath.Join(dir, "state"),
		"KOSHACTL_CONTEXT=", "KOSHACTL_ACTOR=ci@hostile-test", "NO_COLOR=1")
	run := func(wantCode int, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...) //nolint:gosec // G204: the binary this test built
		cmd.Env = env
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("koshactl %s: %v", strings.Join(args, " "), err)
		}
		name := "koshactl " + strings.Join(args, " ")
		termtest.AssertSafe(t, name+" stdout", o.String())
		termtest.AssertSafe(t, name+" stderr", e.String())
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", name, code, wantCode, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	run(0, "config", "set-context", "dev", "--table", "kosha-control", "--region", moto.Region,
		"--endpoint-url", endpoint, "--static-credentials", "--dependencies", "openai,core-api", "--use")
	run(0, "store", "init")

	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	now := time.Now().UnixMilli()
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: strPtr("kosha-control"), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	// openai: forced, with a version of type S and an expiry that is a word.
	put(map[string]types.AttributeValue{"pk": s("breaker#openai"), "state": s("forced_open"), "reason": s(hostileReason),
		"actor": s(hostileActor), "created_at": n(fmt.Sprint(now)), "expires_at": s("tomorrow"), "version": s("1")})
	// core-api: a well-formed override by a hostile actor.
	put(map[string]types.AttributeValue{"pk": s("breaker#core-api"), "state": s("forced_open"), "reason": s(hostileReason),
		"actor": s(hostileActor), "created_at": n(fmt.Sprint(now)), "expires_at": n(fmt.Sprint(now + 3600_000)),
		"ttl": n(fmt.Sprint((now + 3600_000) / 1000)), "version": n("1")})
	// A bucket whose key retitles the terminal, and one whose tokens are text.
	put(map[string]types.AttributeValue{"pk": s("rl#evil\x1b]0;title\x07"), "tokens": n("1"), "updated_at": n(fmt.Sprint(now))})
	put(map[string]types.AttributeValue{"pk": s("rl#agent-1"), "tokens": s("lots\x1b[2J"), "updated_at": n(fmt.Sprint(now))})
	// Audit records: one hostile but readable, one without a time.
	put(map[string]types.AttributeValue{"pk": s(fmt.Sprintf("audit#%013d#00000000000000aa", now)), "time": n(fmt.Sprint(now)),
		"actor": s(hostileActor), "action": s("breaker.force-open\x1b[2J"), "subject": s("breaker#openai"), "reason": s(hostileReason),
		"outcome": s("ok"), "context": s("dev")})
	put(map[string]types.AttributeValue{"pk": s(fmt.Sprintf("audit#%013d#00000000000000bb", now)), "actor": s(hostileActor),
		"action": s("breaker.clear"), "subject": s("breaker#openai\u202e"), "outcome": s("ok")})

	out, _ := run(exitcode.Partial, "breaker", "list")
	if !strings.Contains(out, "openai") || !strings.Contains(out, "core-api") || !strings.Contains(out, hostileShown[1]) {
		t.Errorf("breaker list does not show both overrides, escaped:\n%s", out)
	}
	_, errOut := run(exitcode.Partial, "breaker", "list", "--scan")
	for _, attr := range []string{"version", "expires_at"} {
		if !strings.Contains(errOut, "breaker#openai: "+attr) {
			t.Errorf("breaker list --scan does not name the malformed %s:\n%s", attr, errOut)
		}
	}
	out, _ = run(0, "breaker", "get", "openai")
	if !strings.Contains(out, "malformed") {
		t.Errorf("breaker get does not flag the malformed override:\n%s", out)
	}
	run(0, "breaker", "get", "core-api")
	out, _ = run(exitcode.Partial, "audit", "list", "--scan")
	if !strings.Contains(out, `breaker.force-open\x1b[2J`) {
		t.Errorf("audit list --scan lost the readable record:\n%s", out)
	}
	run(exitcode.Partial, "ratelimit", "list")
	run(0, "-o", "json", "breaker", "get", "core-api")

	// One clear removes the corrupt override, whatever its version's type.
	out, _ = run(0, "breaker", "clear", "openai", "--reason", "corrupt item")
	if !strings.Contains(out, "openai") {
		t.Errorf("clear said:\n%s", out)
	}
	run(exitcode.NotFound, "breaker", "get", "openai")
	out, _ = run(0, "audit", "list", "--subject", "breaker#openai", "-o", "json")
	if !strings.Contains(out, `"before"`) || !strings.Contains(out, "tomorrow") {
		t.Errorf("the clear's audit record does not keep the raw before-image:\n%s", out)
	}
}

func strPtr(s string) *string { return &s }
