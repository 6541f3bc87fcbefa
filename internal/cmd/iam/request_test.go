package iam_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// fourEyesAll needs one approval for every lever (two for a force that
// never expires) and lets anyone break the glass: every lever command can
// then ask or act at once.
const fourEyesAll = `@id("four-eyes-all")
@approvals("1")
permit (
  principal,
  action in [Kosha::Action::"breaker.force-open", Kosha::Action::"breaker.clear",
    Kosha::Action::"ratelimit.reset", Kosha::Action::"ratelimit.drain", Kosha::Action::"ratelimit.set",
    Kosha::Action::"freeze.lift"],
  resource
)
when { !context.no_expiry && context.approvals >= 1 };

@id("forever-two")
@approvals("2")
permit (principal, action == Kosha::Action::"breaker.force-open", resource)
when { context.no_expiry && context.approvals >= 2 };

@id("break-glass")
permit (
  principal,
  action in [Kosha::Action::"breaker.force-open", Kosha::Action::"breaker.clear",
    Kosha::Action::"ratelimit.reset", Kosha::Action::"ratelimit.drain", Kosha::Action::"ratelimit.set",
    Kosha::Action::"freeze.lift"],
  resource
)
when { context.break_glass };
`

// requestContextYAML is a context of a person on the enforcing proxy: its
// credentials are the profile's (an IAM user on moto), and STS (moto,
// straight) verifies who it is, as an approval needs.
const requestContextYAML = `  %s:
    store:
      dynamodb:
        table: kosha-control
        region: %s
        endpoint-url: %s
        profile: %s
        endpoints:
          sns: %s
          sts: %s
    dependencies: [openai, screening-sim, core-api]
    chaos:
      secret-id: kosha/chaos/dev
    metrics:
      cloudwatch:
        endpoint-url: %s
    notify:
      - sns: {topic-arn: ` + notifyTopic + `}
`

// newPeopleWorld is an awsWorld whose contexts alice and bob are two IAM
// users on moto, verified by STS, besides the static context dev (the
// admin's setup). Their profiles live in a credentials file the process
// environment names: the test cannot run in parallel.
func newPeopleWorld(t *testing.T) *awsWorld {
	t.Helper()
	e := clitest.New(t)
	var people map[string]aws.Credentials
	var endpointOf string
	w := buildAWSWorld(t, e, func(endpoint, proxy, sns, cw string) string {
		people = map[string]aws.Credentials{"alice": moto.User(t, endpoint, "alice"), "bob": moto.User(t, endpoint, "bob"), "pat": moto.User(t, endpoint, "pat")}
		endpointOf = endpoint
		moto.UseProfiles(t, e.Setenv, people)
		var cfg string
		for _, name := range []string{"alice", "bob", "pat"} {
			cfg += fmt.Sprintf(requestContextYAML, name, moto.Region, proxy, name, sns, endpoint, cw)
		}
		return cfg
	})
	// The proxy tells the people apart by their keys: their requests carry
	// their unique ids and ARNs, which the policies' variables resolve to.
	for _, c := range people {
		id, arn := moto.Caller(t, endpointOf, c)
		w.enf.AddCaller(c.AccessKeyID, iamtest.Caller{UserID: id, ARN: arn})
	}
	w.people, w.endpoint = people, endpointOf
	return w
}

// Through the enforcing proxy on moto, with the SDK: alice, under each
// role that writes proofs, writes her own proof of a verb her role has,
// and is denied (AccessDenied, nothing written) a proof under bob's unique
// id, and one under her own id naming bob.
func TestNoRoleWritesAnotherIdentitysProofOnMoto(t *testing.T) {
	w := newPeopleWorld(t)
	aliceID, aliceARN := moto.Caller(t, w.endpoint, w.people["alice"])
	bobID, bobARN := moto.Caller(t, w.endpoint, w.people["bob"])
	cfg := moto.Config(t, w.proxy.URL)
	cfg.Credentials = credentials.NewStaticCredentialsProvider(w.people["alice"].AccessKeyID, w.people["alice"].SecretAccessKey, "")
	client := dynamodb.NewFromConfig(cfg)
	direct := dynamodb.NewFromConfig(moto.Config(t, w.endpoint))
	n := 0
	write := func(pk string) error {
		n++
		_, err := client.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String("kosha-control"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
			ConditionExpression: aws.String("attribute_not_exists(pk)")}}}})
		return err
	}
	exists := func(pk string) bool {
		out, err := direct.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String("kosha-control"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item != nil
	}
	for _, c := range []struct {
		role iam.Role
		verb string
	}{{iam.Requester, iam.VerbAsk}, {iam.Operator, iam.VerbGlass}, {iam.Approver, iam.VerbApprove}, {iam.Admin, iam.VerbSet}} {
		w.asRole(t, c.role)
		subject := fmt.Sprintf("#request#%012d", n)
		own := "proof#" + aliceID + "#" + c.verb + "#" + aliceARN + subject
		if err := write(own); err != nil || !exists(own) {
			t.Errorf("%s: alice's own %s proof: %v", c.role, c.verb, err)
		}
		for _, forged := range []string{
			"proof#" + bobID + "#" + c.verb + "#" + bobARN + subject,
			"proof#" + aliceID + "#" + c.verb + "#" + bobARN + subject,
		} {
			err := write(forged)
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDeniedException" || exists(forged) {
				t.Errorf("%s: alice writing %s: %v (written %v), want AccessDenied and nothing written", c.role, forged, err, exists(forged))
			}
		}
		w.enf.TakeDenials()
	}
}

// requestSHA is the request's hash in a command's -o json answer (a
// request made, or shown).
func requestSHA(t *testing.T, stdout string) string {
	t.Helper()
	var r struct {
		SHA256 string `json:"sha256"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.SHA256 == "" {
		t.Fatalf("no sha256 in %q (%v)", stdout, err)
	}
	return r.SHA256
}

// requestID is the request id of a command's -o json answer.
func requestID(t *testing.T, stdout string) string {
	t.Helper()
	var r struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.RequestID == "" {
		t.Fatalf("no request_id in %q (%v)", stdout, err)
	}
	return r.RequestID
}

// requestSteps are the command paths of change requests (issue 32) and
// the lever paths where they ask or break the glass, each also with its
// change's answer lost: on a table whose policy (fourEyesAll) asks one
// approval for every lever, alice (an IAM user STS verifies) asks and
// breaks the glass, bob approves, denies and acknowledges. Each step's
// setup makes what it acts on, unenforced (levers moved with
// --break-glass, which the policy lets anyone do).
func (w *awsWorld) requestSteps(t *testing.T) []cliStep {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "four-eyes.cedar")
	drillFile := filepath.Join(dir, "drill.yaml")
	leversFile := filepath.Join(dir, "levers.yaml")
	for file, text := range map[string]string{policyFile: fourEyesAll, drillFile: strings.ReplaceAll(leversDrill, "context: dev", "context: alice")} {
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	as := func(who string, args ...string) []string { return append([]string{"--context", who}, args...) }
	var rq, rqSHA, review, window string
	n := 0
	// on is setup with four eyes on the table first.
	on := func(setup func()) func() {
		return func() {
			if !w.fourEyes {
				w.MustRun(0, "policy", "set", policyFile, "--reason", "iam test: four eyes")
				w.fourEyes = true
			}
			if setup != nil {
				setup()
			}
		}
	}
	bg := func(args ...string) { w.MustRun(0, append(args, "--reason", "setup", "--break-glass")...) }
	forced := func(dep string) func() {
		return func() {
			w.Run("breaker", "clear", dep, "--reason", "setup", "--break-glass")
			bg("breaker", "force-open", dep, "--for", "10m")
		}
	}
	drained := func() { bg("ratelimit", "drain", "agent-1") }
	frozen := func() { w.MustRun(0, "freeze", "--reason", "setup", "--for", "10m") }
	full := func() { bg("ratelimit", "reset", "agent-1") }
	ask := func(args ...string) func() {
		return func() {
			out := w.MustRun(exitcode.Pending, as("alice", append(args, "--reason", "iam test", "-o", "json")...)...).Stdout
			rq, rqSHA = requestID(t, out), requestSHA(t, out)
		}
	}
	// approvedWindow writes a levers file whose window on screening-sim is
	// in force, has alice ask for it and bob approve it.
	approvedWindow := func() {
		n++
		src := fmt.Sprintf("version: 1\ncontext: alice\nname: iam\nwindows:\n  - {dependency: screening-sim, reason: iam window %d, start: %s, duration: 30m}\n",
			n, w.Clock.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
		window = filepath.Join(dir, fmt.Sprintf("window-%d.yaml", n))
		if err := os.WriteFile(window, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		w.Run("breaker", "clear", "screening-sim", "--reason", "setup", "--break-glass")
		out := w.MustRun(exitcode.Pending, as("alice", "apply", "-f", window, "--request")...).Stdout
		id := regexp.MustCompile(`requested as (w[0-9a-f]{11})`).FindStringSubmatch(out)
		if id == nil {
			t.Fatalf("apply --request: %s", out)
		}
		sha := requestSHA(t, w.MustRun(0, as("bob", "request", "show", id[1], "-o", "json")...).Stdout)
		w.MustRun(0, as("bob", "request", "approve", id[1], "--sha256", sha)...)
	}
	then := func(a, b func()) func() { return func() { a(); b() } }
	fixed := func(args ...string) func() []string { return func() []string { return args } }
	onRequest := func(verb, who string, extra ...string) func() []string {
		return func() []string { return as(who, append([]string{"request", verb, rq}, extra...)...) }
	}
	approve := func(who string) func() []string {
		return func() []string { return as(who, "request", "approve", rq, "--sha256", rqSHA) }
	}
	steps := []cliStep{
		// Asking: a lever the policy does not allow at once becomes a
		// request (exit 12) and moves nothing.
		{"breaker force-open", func() { w.Run("breaker", "clear", "core-api", "--reason", "setup", "--break-glass") },
			fixed(as("alice", "breaker", "force-open", "core-api", "--reason", "iam test", "--for", "10m")...), false, exitcode.Pending},
		{"breaker clear", forced("openai"), fixed(as("alice", "breaker", "clear", "openai", "--reason", "iam test")...), false, exitcode.Pending},
		{"breaker clear --all", forced("openai"), fixed(as("alice", "breaker", "clear", "--all", "--reason", "iam test")...), false, exitcode.Pending},
		{"ratelimit reset", drained, fixed(as("alice", "ratelimit", "reset", "agent-1", "--reason", "iam test")...), false, exitcode.Pending},
		{"ratelimit drain", full, fixed(as("alice", "ratelimit", "drain", "agent-1", "--reason", "iam test")...), false, exitcode.Pending},
		{"ratelimit set", nil, fixed(as("alice", "ratelimit", "set", "agent-1", "--tokens", "3", "--reason", "iam test")...), false, exitcode.Pending},
		{"drill request", nil, fixed(as("alice", "drill", "request", drillFile, "--reason", "iam test")...), false, exitcode.Pending},
		// A freeze is set at once (never asked of the policy); its lift waits.
		{"freeze lift", frozen, fixed(as("alice", "freeze", "lift", "--reason", "iam test")...), false, exitcode.Pending},
		// A window asked for again is found, not asked twice: each asks
		// for a window of its own.
		{"apply --request", func() {
			n++
			src := fmt.Sprintf("version: 1\ncontext: alice\nname: iam\nwindows:\n  - {dependency: screening-sim, reason: iam test %d, start: %s, duration: 30m}\n",
				n, w.Clock.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
			if err := os.WriteFile(leversFile, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
		}, fixed(as("alice", "apply", "-f", leversFile, "--request")...), false, exitcode.Pending},
		// Breaking the glass: the change at once, with its review.
		{"breaker force-open", nil, fixed(as("alice", "breaker", "force-open", "screening-sim", "--overwrite", "--reason", "iam test", "--break-glass")...), false, 0},
		{"breaker clear", forced("openai"), fixed(as("alice", "breaker", "clear", "openai", "--reason", "iam test", "--break-glass")...), false, 0},
		{"breaker clear --all", forced("openai"), fixed(as("alice", "breaker", "clear", "--all", "--reason", "iam test", "--break-glass")...), false, 0},
		{"ratelimit reset", drained, fixed(as("alice", "ratelimit", "reset", "agent-1", "--reason", "iam test", "--break-glass")...), false, 0},
		{"ratelimit drain", full, fixed(as("alice", "ratelimit", "drain", "agent-1", "--reason", "iam test", "--break-glass")...), false, 0},
		{"ratelimit set", nil, fixed(as("alice", "ratelimit", "set", "agent-1", "--tokens", "4", "--reason", "iam test", "--break-glass")...), false, 0},
		{"freeze lift", frozen, fixed(as("alice", "freeze", "lift", "--reason", "iam test", "--break-glass")...), false, 0},
		// Deciding: bob approves a force (a put), a clear (a delete) and a
		// bucket change; denies; alice cancels her own.
		{"request approve", then(func() { w.Run("breaker", "clear", "core-api", "--reason", "setup", "--break-glass") }, ask("breaker", "force-open", "core-api", "--for", "10m")),
			approve("bob"), false, 0},
		{"request approve", then(forced("openai"), ask("breaker", "clear", "openai")), approve("bob"), false, 0},
		{"request approve", then(drained, ask("ratelimit", "set", "agent-1", "--tokens", "5")), approve("bob"), false, 0},
		// bob approves a lift of the fleet's freeze: its item put, nothing
		// frozen after (the windows that follow open).
		{"request approve", then(frozen, ask("freeze", "lift")), approve("bob"), false, 0},
		// One approval of two (a force that never expires): recorded, the
		// closed marker checked absent.
		{"request approve", then(func() { w.Run("breaker", "clear", "core-api", "--reason", "setup", "--break-glass") }, ask("breaker", "force-open", "core-api", "--no-expiry", "--yes")),
			approve("bob"), false, 0},
		// An approval that finds its request expired marks it so (exit 13).
		{"request approve", then(then(drained, ask("ratelimit", "set", "agent-1", "--tokens", "2", "--request-ttl", "1m")), func() { w.Clock.Advance(2 * time.Minute) }),
			approve("bob"), false, exitcode.Closed},
		// A window approved by bob: apply reads its request's proofs and
		// forces it.
		{"apply", approvedWindow, func() []string { return as("alice", "apply", "-f", window) }, false, 0},
		{"request deny", then(full, ask("ratelimit", "drain", "agent-1")), onRequest("deny", "bob", "--reason", "iam test"), false, 0},
		{"request cancel", then(full, ask("ratelimit", "drain", "agent-1")), onRequest("cancel", "alice", "--reason", "iam test"), false, 0},
		{"request list", then(full, ask("ratelimit", "drain", "agent-1")), fixed(as("alice", "request", "list")...), false, 0},
		{"request list", nil, fixed(as("alice", "request", "list", "--reviews")...), false, 0},
		{"request show", then(full, ask("ratelimit", "drain", "agent-1")), onRequest("show", "alice"), false, 0},
		// Acknowledging alice's break-glass review.
		{"request ack", func() {
			var res struct{ Review string }
			r := w.MustRun(0, as("alice", "ratelimit", "set", "agent-1", "--tokens", "6", "--reason", "setup", "--break-glass", "-o", "json")...)
			if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res.Review == "" {
				t.Fatalf("break-glass set: no review in %s (%v)", r.Stdout, err)
			}
			review = res.Review
		}, func() []string { return as("bob", "request", "ack", review, "--reason", "seen") }, false, 0},
		// A review naming no proof of who broke its glass (made before
		// proofs): ack looks for the proof among the table's.
		{"request ack", func() {
			var res struct{ Review string }
			r := w.MustRun(0, as("alice", "ratelimit", "set", "agent-1", "--tokens", "7", "--reason", "setup", "--break-glass", "-o", "json")...)
			if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res.Review == "" {
				t.Fatalf("break-glass set: no review in %s (%v)", r.Stdout, err)
			}
			review = res.Review
			st := dynamo.NewFromConfig(moto.Config(t, w.endpoint), "kosha-control")
			it, err := st.Get(t.Context(), approval.ReviewPrefix+review)
			if err != nil {
				t.Fatal(err)
			}
			delete(it, "proofs")
			if err := st.Put(t.Context(), it, store.Always()); err != nil {
				t.Fatal(err)
			}
		}, func() []string { return as("bob", "request", "ack", review, "--reason", "seen") }, false, 0},
	}
	var lost []cliStep
	for _, s := range steps {
		switch s.path {
		case "request list", "request show":
		default:
			s.lose = true
			lost = append(lost, s)
		}
	}
	steps = append(steps, lost...)
	for i := range steps {
		steps[i].setup = on(steps[i].setup)
	}
	return steps
}
