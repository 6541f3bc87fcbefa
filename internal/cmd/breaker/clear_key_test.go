package breaker_test

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Issue 21: an override item whose pk is not a valid dependency name
// (`breaker#Bad Name`, written by hand) could not be cleared: the warning
// said `breaker clear Bad Name`, which refuses the name. The warning now
// names `breaker clear --key 'breaker#Bad Name'`, which clears it,
// conditional and audited like any clear, and so does --all.
func TestClearByKeyLocalContext(t *testing.T) {
	t.Parallel()
	testClearByKey(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) { return e.PutRaw })
}

func TestClearByKeyDynamoDBContext(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	testClearByKey(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) {
		e.UseDynamoDB(endpoint, "clear-key")
		e.MustRun(0, "store", "init")
		return func(attrs map[string]attr) { storetest.PutRawDynamoDB(t, client, "clear-key", attrs) }
	})
}

func testClearByKey(t *testing.T, setup func(t *testing.T, e *clitest.Env) func(map[string]attr)) {
	e := clitest.New(t, clitest.Parallel())
	write := setup(t, e)
	bad := hostileItem(map[string]attr{"pk": {Type: "S", Text: "breaker#Bad Name"}, "note": {Type: "BOOL", Text: "true"}})
	write(bad)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "valid", "--for", "30m")

	r := e.MustRun(exitcode.Partial, "breaker", "list", "--scan")
	hint := "koshactl breaker clear --key 'breaker#Bad Name'"
	if !strings.Contains(r.Stderr, hint) || !strings.Contains(r.Stdout, "openai") {
		t.Fatalf("list does not name %q:\n%s\n%s", hint, r.Stdout, r.Stderr)
	}
	e.MustRun(exitcode.Usage, "breaker", "clear", "Bad Name")
	e.MustRun(exitcode.Usage, "breaker", "clear", "--key", "rl#alice")
	e.MustRun(exitcode.Usage, "breaker", "clear", "--key", "breaker#")
	e.MustRun(exitcode.Usage, "breaker", "clear", "--key", "breaker#x", "--all")

	// The hint, as a shell would pass it.
	r = e.MustRun(0, "breaker", "clear", "--key", "breaker#Bad Name", "--reason", "hand-written")
	if !strings.Contains(r.Stdout, `Cleared override on "breaker#Bad Name" set by alice@laptop (a malformed item, removed as it was stored)`) {
		t.Errorf("clear --key: %s", r.Stdout)
	}
	if r = e.MustRun(0, "breaker", "list", "--scan"); strings.Contains(r.Stdout, "Bad Name") || !strings.Contains(r.Stdout, "openai") {
		t.Errorf("after clear --key:\n%s", r.Stdout)
	}
	recs := clitest.Decode[struct {
		Items []struct {
			Action  string          `json:"action"`
			Subject string          `json:"subject"`
			Reason  string          `json:"reason"`
			Before  json.RawMessage `json:"before"`
		} `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "--subject", "breaker#Bad Name", "-o", "json").Stdout)
	if len(recs.Items) != 1 || recs.Items[0].Action != "breaker.clear" || recs.Items[0].Reason != "hand-written" ||
		!strings.Contains(string(recs.Items[0].Before), `"BOOL"`) {
		t.Errorf("audit of clear --key: %+v", recs.Items)
	}
	// Gone now: a key with nothing stored under it follows clear's
	// known-dependency rule, as a name does (a typo is refused).
	e.MustRun(exitcode.Usage, "breaker", "clear", "--key", "breaker#Bad Name")
	if r = e.MustRun(0, "breaker", "clear", "--key", "breaker#Bad Name", "--allow-unknown"); !strings.Contains(r.Stdout, "nothing to clear") {
		t.Errorf("second clear --key: %s", r.Stdout)
	}

	// --all clears it with the rest.
	write(bad)
	if r = e.MustRun(0, "breaker", "clear", "--all"); !strings.Contains(r.Stdout, `"breaker#Bad Name"`) || !strings.Contains(r.Stdout, "openai") {
		t.Errorf("clear --all:\n%s\n%s", r.Stdout, r.Stderr)
	}
	if r = e.MustRun(0, "breaker", "list", "--scan"); strings.Contains(r.Stdout, "Bad Name") || strings.Contains(r.Stdout, "openai") {
		t.Errorf("after clear --all:\n%s", r.Stdout)
	}
}

// Issue 35: the hint for a pk holding ESC or NUL quoted it for a shell,
// but no terminal shows those bytes as typed, so the hint could not be
// pasted back. It names --key-hex with the pk's bytes, which clears it.
func TestClearByKeyHexOfAControlPK(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	pk := "breaker#\x1b[2Jx\x00y"
	e.PutRaw(hostileItem(map[string]attr{"pk": {Type: "S", Text: pk}}))

	r := e.MustRun(exitcode.Partial, "breaker", "list", "--scan")
	hint := "koshactl breaker clear --key-hex " + hex.EncodeToString([]byte(pk))
	if !strings.Contains(r.Stderr, hint) || strings.Contains(r.Stderr, "--key '") {
		t.Fatalf("list --scan does not name %q:\n%s", hint, r.Stderr)
	}
	e.MustRun(exitcode.Usage, "breaker", "clear", "--key-hex", "zz", "--reason", "bad hex")
	r = e.MustRun(0, append(strings.Fields(strings.TrimPrefix(hint, "koshactl ")), "--reason", "control pk")...)
	if !strings.Contains(r.Stdout, "Cleared override") {
		t.Errorf("clear --key-hex: %s", r.Stdout)
	}
	if r = e.MustRun(0, "breaker", "list", "--scan"); r.Stderr != "" && strings.Contains(r.Stderr, "--key") {
		t.Errorf("after clear --key-hex, still named: %s", r.Stderr)
	}
}
