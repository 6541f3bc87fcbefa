package chaos_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// newFakeSM starts the Secrets Manager fake on the CLI's clock, holding
// the named secrets without versions.
func newFakeSM(c *cli, secretIDs ...string) *smfake.Server {
	f := smfake.New(c.T, c.Clock)
	for _, id := range secretIDs {
		f.Create(id)
	}
	return f
}

// useSecretsManager points the resolved context's AWS configuration at srv
// (static test credentials, one attempt per request), so the commands build
// their real Secrets Manager client from it.
func useSecretsManager(c *cli, srv *smfake.Server) {
	cfg := aws.Config{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDCHAOSCLITEST", "not-a-real-secret-key", ""),
		Retryer:      func() aws.Retryer { return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 1 }) },
	}
	c.hook = func(f *cmdenv.Factory) {
		resolve := f.Env
		f.Env = func(ctx context.Context) (*cmdenv.Env, error) {
			env, err := resolve(ctx)
			if err != nil {
				return nil, err
			}
			env.AWSConfig = func(context.Context) (aws.Config, error) { return cfg, nil }
			return env, nil
		}
	}
}

const smConfig = `current-context: aws-dev
contexts:
  aws-dev:
    store:
      local: {}
    chaos:
      secret-id: kosha/chaos/dev
`

type keyIDs struct {
	KeySource string `json:"key_source"`
	KeyOrigin string `json:"key_origin"`
	Keys      []struct {
		Stage     string `json:"stage"`
		KID       string `json:"kid"`
		VersionID string `json:"version_id"`
	} `json:"keys"`
}

func TestSecretsManagerRotationKeepsHeadersInFlight(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig(smConfig)
	fake := newFakeSM(c, "kosha/chaos/dev")
	useSecretsManager(c, fake)

	// An empty secret: nothing to sign with yet, and the error says how to fix it.
	r := c.must(exitcode.NotFound, "chaos", "sign", "--target", "openai", "--fault", "error")
	oneErrorLine(t, r, `"kosha/chaos/dev"`, "koshactl chaos key rotate")
	r = c.must(0, "chaos", "key", "rotate", "--dry-run")
	if !strings.Contains(r.Stdout, "Would store the first chaos key in Secrets Manager secret \"kosha/chaos/dev\"") || fake.Calls("PutSecretValue") != 0 {
		t.Fatalf("dry run on an empty secret:\n%s", r.Stdout)
	}

	// The first key signs at once: there is no other.
	first := clitest.Decode[rotation](t, c.must(0, "chaos", "key", "rotate", "-o", "json").Stdout)
	ids := clitest.Decode[keyIDs](t, c.must(0, "chaos", "key", "id", "-o", "json").Stdout)
	if len(ids.Keys) != 1 || ids.Keys[0].Stage != "AWSCURRENT" || ids.Keys[0].VersionID != first.After.VersionID ||
		ids.KeyOrigin != "chaos.secret-id" || ids.KeySource != `Secrets Manager secret "kosha/chaos/dev"` {
		t.Fatalf("key id after the first rotation = %+v (rotation %+v)", ids, first)
	}
	kid1 := ids.Keys[0].KID
	r = c.must(0, "chaos", "sign", "--target", "core-api", "--fault", "latency", "--ms", "100", "-o", "value")
	h1 := strings.TrimSpace(r.Stdout)
	if !strings.Contains(h1, ";kid="+kid1+";") || !strings.Contains(r.Stderr, `from Secrets Manager secret "kosha/chaos/dev" (context "aws-dev")`) {
		t.Fatalf("sign with AWSCURRENT: %s\n%s", h1, r.Stderr)
	}

	// Too soon to rotate: refused with the time it becomes allowed.
	c.Clock.Advance(time.Minute)
	r = c.must(exitcode.Refused, "chaos", "key", "rotate")
	oneErrorLine(t, r, clitest.Epoch.Add(21*time.Minute).Format(time.RFC3339), "--force")
	if !strings.Contains(c.must(0, "chaos", "key", "rotate", "--dry-run").Stdout, "it would be refused until "+clitest.Epoch.Add(21*time.Minute).Format(time.RFC3339)) {
		t.Error("the dry run does not say the rotation would be refused")
	}

	// Rotate (forced, h1 is still live): h1's key is now AWSPREVIOUS, still
	// verifies by kid, and keeps signing through the propagation delay.
	rotatedAt := c.Clock.Now()
	r = c.must(0, "chaos", "key", "rotate", "--force")
	signsFrom := rotatedAt.Add(5 * time.Minute).UTC().Format(time.RFC3339)
	if !strings.Contains(r.Stdout, "signs from "+signsFrom) {
		t.Errorf("rotation output does not say when the new key signs (%s):\n%s", signsFrom, r.Stdout)
	}
	table := c.must(0, "chaos", "key", "id").Stdout
	if !strings.Contains(table, "AWSPREVIOUS  "+kid1+"  "+first.After.VersionID) || !strings.Contains(table, "AWSCURRENT ") {
		t.Fatalf("key id after the second rotation:\n%s", table)
	}
	rep := clitest.Decode[verifyReport](t, c.must(0, "chaos", "verify", h1, "-o", "json").Stdout)
	if !rep.OK || rep.outcome("kid") != "pass" || rep.outcome("signature") != "pass" {
		t.Fatalf("a header signed with AWSPREVIOUS: %+v", rep)
	}
	hDelay := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	if !strings.Contains(hDelay, ";kid="+kid1+";") {
		t.Fatal("signed with the new key during the propagation delay")
	}
	c.Clock.Advance(5 * time.Minute)
	h2 := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	if strings.Contains(h2, ";kid="+kid1+";") {
		t.Fatal("signed with AWSPREVIOUS after the propagation delay")
	}

	// A third rotation, once allowed (21m after the second), retires kid1:
	// h1 fails the kid check; a header signed just before still passes.
	c.Clock.Advance(16 * time.Minute)
	h3 := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	rot := clitest.Decode[rotation](t, c.must(0, "chaos", "key", "rotate", "-o", "json").Stdout)
	if rot.RetiredKID != kid1 || rot.After.VersionID == "" || rot.Before.PreviousKID != kid1 {
		t.Errorf("third rotation = %+v", rot)
	}
	r = c.must(exitcode.Error, "chaos", "verify", h1)
	oneErrorLine(t, r, "rejected by the kid check", kid1, "AWSPREVIOUS kid")
	c.must(0, "chaos", "verify", h3)

	recs := auditRecords(t, c, "chaos.key-rotate")
	if len(recs) != 3 || recs[0].Subject != "chaos-key#kosha/chaos/dev" || len(recs[2].Before) != 0 {
		t.Fatalf("rotation audit = %+v", recs)
	}
	after := clitest.Decode[kidState](t, string(recs[0].After))
	if after.PreviousKID == "" || after.CurrentKID == "" || after.VersionID == "" {
		t.Errorf("rotation audit after = %s", recs[0].After)
	}
	if n := len(auditRecords(t, c, "chaos.sign")); n != 4 {
		t.Errorf("%d mints audited, want 4", n)
	}
	vals := fake.Values()
	if len(vals) != 3 {
		t.Fatalf("%d versions stored, want 3", len(vals))
	}
	for _, v := range vals {
		assertNoKey(t, c, v)
	}
	if _, ok := fake.Stages("kosha/chaos/dev")["AWSPENDING"]; ok {
		t.Error("a rotation left AWSPENDING behind")
	}
}

type rotation struct {
	Before     kidState `json:"before"`
	After      kidState `json:"after"`
	RetiredKID string   `json:"retired_kid"`
}

// Another operator rotates between this rotation's read and its write: the
// command exits 4, says so, audits nothing and leaves the winner in place.
func TestSecretsManagerConcurrentRotationIsAConflict(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig(smConfig)
	fake := newFakeSM(c, "kosha/chaos/dev")
	useSecretsManager(c, fake)
	c.must(0, "chaos", "key", "rotate")
	c.Clock.Advance(time.Hour)
	var winner rotation
	fake.BeforeNext("PutSecretValue", func() {
		winner = clitest.Decode[rotation](t, c.must(0, "chaos", "key", "rotate", "-o", "json").Stdout)
	})
	r := c.must(exitcode.Conflict, "chaos", "key", "rotate")
	oneErrorLine(t, r, "another rotation won", winner.After.VersionID)
	st := fake.Stages("kosha/chaos/dev")
	if st["AWSCURRENT"] != winner.After.VersionID || st["AWSPENDING"] != "" {
		t.Errorf("stages %v after the conflict, want the winner current and no AWSPENDING", st)
	}
	if n := len(auditRecords(t, c, "chaos.key-rotate")); n != 2 {
		t.Errorf("%d rotations audited, want the 2 that happened", n)
	}
}

// A rotation by someone else lands after this command displayed the keys
// but before its own compare-and-set read: the audit record names the keys
// the compare-and-set replaced, not the ones first displayed.
func TestRotationAuditNamesTheKeysItReplaced(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig(smConfig)
	fake := newFakeSM(c, "kosha/chaos/dev")
	useSecretsManager(c, fake)
	c.must(0, "chaos", "key", "rotate")
	c.Clock.Advance(time.Hour)
	var other rotation
	// The command reads AWSCURRENT and AWSPREVIOUS to display them, then
	// again for the compare-and-set: the other rotation goes in between.
	fake.BeforeNext("GetSecretValue", func() {
		fake.BeforeNext("GetSecretValue", func() {
			fake.BeforeNext("GetSecretValue", func() {
				other = clitest.Decode[rotation](t, c.must(0, "chaos", "key", "rotate", "--force", "-o", "json").Stdout)
				// Audit records of one millisecond list in no set order:
				// this one's record is written later, and lists first.
				c.Clock.Advance(time.Second)
			})
		})
	})
	mine := clitest.Decode[rotation](t, c.must(0, "chaos", "key", "rotate", "--force", "-o", "json").Stdout)
	if mine.Before.CurrentKID != other.After.CurrentKID || mine.After.PreviousKID != other.After.CurrentKID {
		t.Fatalf("rotation reports replacing %+v, want the other rotation's key %s", mine.Before, other.After.CurrentKID)
	}
	recs := auditRecords(t, c, "chaos.key-rotate")
	if len(recs) != 3 {
		t.Fatalf("%d rotation records, want 3", len(recs))
	}
	// The records of one clock instant list in no particular order: find
	// this rotation's by the key it made current.
	var before kidState
	for _, r := range recs {
		if clitest.Decode[kidState](t, string(r.After)).CurrentKID == mine.After.CurrentKID {
			before = clitest.Decode[kidState](t, string(r.Before))
		}
	}
	if before.CurrentKID != other.After.CurrentKID || before.VersionID != other.After.VersionID {
		t.Errorf("audit before = %s, want the other rotation's key %s (version %s)", recs[0].Before, other.After.CurrentKID, other.After.VersionID)
	}
}

func TestSecretsManagerAccessDenied(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig(smConfig)
	fake := newFakeSM(c, "kosha/chaos/dev")
	useSecretsManager(c, fake)
	c.must(0, "chaos", "key", "rotate")
	h := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)

	fake.Fail("GetSecretValue", 400, "AccessDeniedException", -1)
	r := c.must(exitcode.Auth, "chaos", "sign", "--target", "openai", "--fault", "error")
	oneErrorLine(t, r, "access denied", "secretsmanager:GetSecretValue")
	// Verify cannot decide: the table says so, and the exit is the key store's.
	r = c.must(exitcode.Auth, "chaos", "verify", h)
	if !strings.Contains(r.Stdout, "kid        ERROR") || !strings.Contains(r.Stdout, "UNDECIDED") {
		t.Errorf("verify with a denied key store:\n%s", r.Stdout)
	}
	oneErrorLine(t, r, "access denied")
	c.must(exitcode.Auth, "chaos", "key", "id")

	fake = newFakeSM(c, "kosha/chaos/dev") // a fresh secret: no age guard, reads allowed
	useSecretsManager(c, fake)
	fake.Fail("PutSecretValue", 400, "AccessDeniedException", -1)
	r = c.must(exitcode.Auth, "chaos", "key", "rotate")
	oneErrorLine(t, r, "secretsmanager:PutSecretValue")
	if n := len(auditRecords(t, c, "chaos.key-rotate")); n != 1 {
		t.Errorf("%d rotations audited, want only the one that happened", n)
	}
	if n := len(auditRecords(t, c, "chaos.sign")); n != 1 {
		t.Errorf("%d mints audited, want 1", n)
	}
	for _, v := range fake.Values() {
		assertNoKey(t, c, v)
	}
}

func TestSecretsManagerMissingSecret(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig(smConfig)
	useSecretsManager(c, newFakeSM(c)) // no secret at all
	r := c.must(exitcode.NotFound, "chaos", "key", "rotate")
	oneErrorLine(t, r, "aws secretsmanager create-secret --name kosha/chaos/dev")
	if n := len(auditRecords(t, c, "")); n != 0 {
		t.Errorf("a failed rotation was audited")
	}
}
