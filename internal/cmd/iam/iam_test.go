package iam_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/notify/snsfake"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// awsWorld is one DynamoDB context on moto (through a recording,
// enforcing proxy), its chaos secret in a fake Secrets Manager and its
// gauges and alarms in a fake CloudWatch, all three enforcing enf's policy.
type awsWorld struct {
	*clitest.Env
	proxy *iamtest.Proxy
	rec   *recorder
	cw    *cwfake.Server
	sm    *smfake.Server
	sns   *snsfake.Server
	enf   *iamtest.Enforcer
	// fourEyes is true while the table holds fourEyesAll (the request
	// steps of cliSteps); the other steps put an allow-all policy back.
	fourEyes bool
	// people are the IAM users of newPeopleWorld, by name; endpoint is
	// moto's.
	people   map[string]aws.Credentials
	endpoint string
}

const contextYAML = `current-context: %s
contexts:
  %s:
    store:
      dynamodb:
        table: kosha-control
        region: %s
        endpoint-url: %s
        endpoints:
          sns: %s
        static-credentials: true
    dependencies: [openai, screening-sim, core-api]
    chaos:
      secret-id: kosha/chaos/dev
    metrics:
      cloudwatch:
        endpoint-url: %s
    notify:
      - sns: {topic-arn: ` + notifyTopic + `}
`

// notifyTopic is the contexts' SNS notification topic.
const notifyTopic = "arn:aws:sns:us-east-1:123456789012:koshactl-incidents"

func newAWSWorld(t *testing.T) *awsWorld {
	t.Helper()
	return buildAWSWorld(t, clitest.New(t, clitest.Parallel()), nil)
}

// buildAWSWorld starts moto and the fakes for e, writes its config (the
// context dev, then what contexts adds for the moto endpoint and the
// proxy's, SNS's and CloudWatch's URLs) and makes the table as the admin.
func buildAWSWorld(t *testing.T, e *clitest.Env, contexts func(endpoint, proxy, sns, cw string) string) *awsWorld {
	t.Helper()
	endpoint := moto.Start(t)
	enf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/koshactl/test")
	sm := newFakeSM(t, e.Clock, enf)
	cw := newFakeCW(t, enf)
	sns := newFakeSNS(t, enf)
	proxy, rec := dynamoProxy(t, endpoint, sm.URL, cw.URL, testTarget, enf)
	cfg := fmt.Sprintf(contextYAML, "dev", "dev", moto.Region, proxy.URL, sns.URL(), cw.URL)
	if contexts != nil {
		cfg += contexts(endpoint, proxy.URL, sns.URL(), cw.URL)
	}
	e.WriteConfig(cfg)
	w := &awsWorld{Env: e, proxy: proxy, rec: rec, cw: cw, sm: sm, sns: sns, enf: enf}
	w.asRole(t, iam.Admin)
	w.MustRun(0, "store", "init")
	w.enf.SetPolicy(nil)
	rec.take()
	return w
}

// asRole makes role's policy the one the fakes and the proxy enforce.
func (w *awsWorld) asRole(t *testing.T, role iam.Role) {
	w.enf.SetPolicy(policyOf(t, role, testTarget))
}

// run runs args with --debug and returns what it asked of AWS.
func (w *awsWorld) run(t *testing.T, args ...string) []iam.Need {
	t.Helper()
	return w.runCode(t, 0, args...)
}

// runCode is run of a command expected to exit code.
func (w *awsWorld) runCode(t *testing.T, code int, args ...string) []iam.Need {
	t.Helper()
	w.rec.take()
	r := w.MustRun(code, append([]string{"--debug"}, args...)...)
	return append(w.rec.take(), debugNeeds(r.Stderr)...)
}

// cliStep is one command path of iam.Commands() run from the CLI: setup
// (unenforced) makes the state it acts on, args are its arguments. With
// lose, the store never answers the path's first change (every attempt of
// it is applied and its answer lost), so the path settles it by reading
// the change's proof.
type cliStep struct {
	path  string
	setup func()
	args  func() []string
	lose  bool
	// code is the exit code the step expects (0 unless set).
	code int
}

// loseChange makes p lose every answer to the first change
// (TransactWriteItems) from now for which match is true (nil: any): every
// attempt of it, since they share its ClientRequestToken, and nothing
// else. moto applies the first attempt and refuses the rest on their own
// conditions; the client hears none of it, and store.Apply reads the
// change's proof.
func loseChange(p *iamtest.Proxy, match func(body []byte) bool) {
	token := ""
	p.LoseAnswers(func(op string, body []byte) bool {
		if op != iam.TransactWriteItems {
			return false
		}
		var in struct{ ClientRequestToken string }
		if json.Unmarshal(body, &in) != nil || in.ClientRequestToken == "" {
			return false
		}
		if token == "" && (match == nil || match(body)) {
			token = in.ClientRequestToken
		}
		return in.ClientRequestToken == token
	})
}

// writes reports whether a TransactWriteItems body is a change that may
// land: not a lever's transaction at the floor on a table with a policy,
// which its check that there is none refuses (the change that writes
// follows it, decided on the policy the refusal returned).
func writes(body []byte) bool {
	return !bytes.Contains(body, []byte(`"ConditionCheck"`)) || !bytes.Contains(body, []byte(`{"S":"policy#table"}`))
}

// isClear reports whether a TransactWriteItems body deletes an item: a
// clear, settled (its answer lost) by reading its first record.
func isClear(body []byte) bool { return bytes.Contains(body, []byte(`"Delete":`)) }

// setupStep makes the state s acts on, unenforced, and arms its lost
// answer.
func (w *awsWorld) setupStep(s cliStep) {
	w.enf.SetPolicy(nil)
	w.proxy.LoseAnswers(nil)
	if s.setup != nil {
		s.setup()
	}
	if s.lose {
		loseChange(w.proxy, writes)
	}
}

// cliSteps are the command paths of iam.Commands() the CLI runs in one world
// (drill run, sandbox and the store commands have tests of their own).
func (w *awsWorld) cliSteps(t *testing.T) []cliStep {
	fixed := func(args ...string) func() []string { return func() []string { return args } }
	var header string
	allowAll := filepath.Join(t.TempDir(), "allow-all.cedar")
	if err := os.WriteFile(allowAll, []byte("permit (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A levers file with a window of screening-sim in force now (written before
	// each step: the clock moves between rounds), and the same file with
	// the window removed (its override is then cleared).
	leversFile := filepath.Join(t.TempDir(), "levers.yaml")
	writeLevers := func(windows string) func() {
		return func() {
			src := "version: 1\ncontext: dev\nname: iam\nwindows:" + windows + "\n"
			src = strings.ReplaceAll(src, "START", w.Clock.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
			if err := os.WriteFile(leversFile, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	window := writeLevers("\n  - {dependency: screening-sim, reason: iam test, start: START, duration: 30m}")
	noWindow := writeLevers(" []")
	applyArgs := fixed("apply", "-f", leversFile)
	steps := []cliStep{
		// Levers as code, before the table has a policy: apply forces a
		// window's override and clears it once the window is gone, with and
		// without a lost answer (the policy and the windows' requests read
		// in one batch either way); diff reads what apply wrote and the
		// gauges.
		{"apply", window, applyArgs, false, 0},
		{"diff", nil, fixed("diff", "-f", leversFile), false, 0},
		{"apply", noWindow, applyArgs, false, 0},
		{"apply", window, applyArgs, true, 0},
		{"apply", noWindow, applyArgs, true, 0},
		// Then: with a policy stored, every lever command reads it (a
		// policy that allows everything, so they go on as before).
		// The admin (pat, an IAM user STS verifies) sets the policy with
		// the proof of it, and again the same text (its proof read: nothing
		// to write).
		{"policy set", nil, fixed("--context", "pat", "policy", "set", allowAll, "--reason", "iam test"), false, 0},
		{"policy set", nil, fixed("--context", "pat", "policy", "set", allowAll, "--reason", "iam test"), false, 0},
		{"policy get", nil, fixed("policy", "get"), false, 0},
		{"can-i", nil, fixed("can-i", "breaker.force-open", "openai", "--for", "10m"), false, 0},
		{"breaker force-open", func() { w.Run("breaker", "clear", "--all", "--reason", "iam test") }, fixed("breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m"), false, 0},
		{"breaker get", nil, fixed("breaker", "get", "openai"), false, 0},
		{"breaker list", nil, fixed("breaker", "list"), false, 0},
		{"breaker list --scan", nil, fixed("breaker", "list", "--scan"), false, 0},
		{"breaker status", nil, fixed("breaker", "status"), false, 0},
		{"breaker clear", func() {
			w.MustRun(0, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m", "--overwrite")
		},
			fixed("breaker", "clear", "openai", "--reason", "iam test"), false, 0},
		{"ratelimit get", nil, fixed("ratelimit", "get", "agent-1"), false, 0},
		{"ratelimit list", nil, fixed("ratelimit", "list"), false, 0},
		{"ratelimit reset", nil, fixed("ratelimit", "reset", "agent-1", "--reason", "iam test"), false, 0},
		{"ratelimit drain", nil, fixed("ratelimit", "drain", "--create", "agent-1", "--reason", "iam test"), false, 0},
		{"ratelimit set", nil, fixed("ratelimit", "set", "--create", "agent-1", "--tokens", "5", "--reason", "iam test"), false, 0},
		// A typo of agent-1, refused with the suggestion a scan finds.
		{"ratelimit drain", nil, fixed("ratelimit", "drain", "agnet-1", "--reason", "iam test"), false, 3},
		{"ratelimit set", nil, fixed("ratelimit", "set", "agnet-1", "--tokens", "5", "--reason", "iam test"), false, 3},
		{"ratelimit reset", nil, fixed("ratelimit", "reset", "agnet-1", "--reason", "iam test"), false, 3},
		{"audit list", nil, fixed("audit", "list"), false, 0},
		{"audit list --scan", nil, fixed("audit", "list", "--scan"), false, 0},
		// A force that never asked the table's policy (another tool's write):
		// the scheduled detection lists it, announces it and fails (exit 1).
		{"audit list --unapproved --notify", w.bypass, fixed("audit", "list", "--unapproved", "--since", "15m", "--notify"), false, exitcode.Error},
		{"chaos key id", nil, fixed("chaos", "key", "id"), false, 0},
		{"chaos sign", nil, fixed("chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value"), false, 0},
		{"chaos verify", func() {
			header = strings.TrimSpace(w.MustRun(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
		}, func() []string { return []string{"chaos", "verify", header} }, false, 0},
		// The clock is moved past the minimum key age.
		{"chaos key rotate", func() { w.Clock.Advance(time.Hour) }, fixed("chaos", "key", "rotate"), false, 0},
		// clear --all scans for every override, then clears each.
		{"breaker clear --all", func() {
			w.MustRun(0, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m", "--overwrite")
			w.MustRun(0, "breaker", "force-open", "core-api", "--reason", "iam test", "--for", "10m", "--overwrite")
		}, fixed("breaker", "clear", "--all", "--reason", "iam test"), false, 0},
		// The fleet's freeze, after the chaos steps (sign mints nothing while
		// it holds): set, shown, lifted.
		{"freeze", nil, fixed("freeze", "--reason", "iam test", "--ref", "INC-1", "--for", "10m"), false, 0},
		{"freeze status", nil, fixed("freeze", "status"), false, 0},
		{"freeze lift", func() { w.MustRun(0, "freeze", "--reason", "setup", "--for", "10m") }, fixed("freeze", "lift", "--reason", "iam test"), false, 0},
	}
	// Every path that changes something, its change's answer lost: a
	// force's is settled by reading the override it put, a bucket change's
	// by the bucket, a clear's and a lone record's by the change's first
	// record.
	lost := []cliStep{}
	for _, s := range steps {
		switch s.path {
		case "breaker force-open", "breaker clear", "breaker clear --all", "ratelimit reset", "ratelimit drain", "ratelimit set",
			"chaos sign", "chaos key rotate", "freeze", "freeze lift":
			if s.code != 0 {
				continue // refused: no change to lose
			}
			s.lose = true
			if s.path == "ratelimit reset" {
				// The bucket has refilled since (the clock moved an hour):
				// drained, its reset changes it.
				s.setup = func() { w.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "setup") }
			}
			lost = append(lost, s)
		}
	}
	// policy set, its answer lost, settled by reading its record: the
	// table holds another text first, so the set writes.
	other := filepath.Join(t.TempDir(), "allow-all-too.cedar")
	if err := os.WriteFile(other, []byte("// another text, the same decisions\npermit (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lost = append(lost, cliStep{"policy set", func() {
		w.MustRun(0, "--context", "pat", "policy", "set", other, "--reason", "iam test: another text")
	}, fixed("--context", "pat", "policy", "set", allowAll, "--reason", "iam test"), true, 0})
	steps = append(steps, lost...)
	for i := range steps {
		steps[i].setup = w.allowAll(allowAll, steps[i].setup)
	}
	return append(steps, w.requestSteps(t)...)
}

// allowAll is setup run after the table's allow-all policy (file) is put
// back, if the request steps left four eyes on it.
func (w *awsWorld) allowAll(file string, setup func()) func() {
	return func() {
		if w.fourEyes {
			w.MustRun(0, "policy", "set", file, "--reason", "iam test: allow all again")
			w.fourEyes = false
		}
		// No step starts frozen (a step left it so, its lift denied): chaos
		// sign and apply would be refused for the freeze's sake.
		w.MustRun(0, "freeze", "lift", "--reason", "iam test: unfreeze")
		if setup != nil {
			setup()
		}
	}
}

// bypass forces openai as a writer that never asks the table's policy
// would (an older koshactl, another tool): the override and its record,
// without an approval.
func (w *awsWorld) bypass() {
	s := dynamo.NewFromConfig(moto.Config(w.T, w.proxy.URL), "kosha-control")
	if _, _, err := levertest.Force(context.Background(), s, w.Clock, audit.NewLog(s, w.Clock, "dev"), levertest.Req{Dependency: "openai", Reason: "no questions asked", Actor: "old-koshactl@host", For: 10 * time.Minute, Overwrite: true}); err != nil {
		w.T.Fatal(err)
	}
}

// prepare makes the state every step expects: gauges, a first chaos key, a
// bucket.
func (w *awsWorld) prepare() {
	w.enf.SetPolicy(nil)
	w.cw.Put("openai", "gw-1", clitest.Epoch.Add(-30*time.Second), 0)
	w.MustRun(0, "chaos", "key", "rotate") // a first key, so sign and verify have one
	w.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--create", "--reason", "setup")
}

// Every command path in iam.Commands(), run against moto and the fakes
// under the policy of the smallest role that has it, passes and calls
// exactly the operations the table declares for it: what a role's policy
// grants is what its commands do, and enough for them.
func TestCommandsCallExactlyTheirDeclaredOperations(t *testing.T) {
	w := newPeopleWorld(t)
	w.prepare()
	seen := map[string]bool{}
	called := map[string][]iam.Need{}
	for _, s := range w.cliSteps(t) {
		w.setupStep(s)
		role := smallestRole(s.path)
		if role == "" {
			t.Fatalf("%s is in no role", s.path)
		}
		w.asRole(t, role)
		lost := w.proxy.Lost()
		got := w.runCode(t, s.code, s.args()...)
		w.proxy.LoseAnswers(nil)
		if s.lose && w.proxy.Lost() == lost {
			t.Errorf("koshactl %s: no answer was lost", s.path)
		}
		for _, n := range got {
			if !slices.Contains(iam.Commands()[s.path], n) {
				t.Errorf("koshactl %s (answer lost: %v) called %s, not in iam.Commands()", s.path, s.lose, n)
			}
		}
		called[s.path] = union(called[s.path], got)
		if d := w.enf.TakeDenials(); len(d) > 0 {
			t.Errorf("koshactl %s as %s: denied %v", s.path, role, d)
		}
		seen[s.path] = true
	}
	for path, got := range called {
		if d := sameNeeds(got, iam.Commands()[path]); d != "" {
			t.Errorf("koshactl %s, with and without a lost answer: %s", path, d)
		}
	}
	for _, path := range []string{"drill run", "sandbox"} {
		seen[path] = true // TestDrillAndDataPlaneRolesCallExactlyAndNeedEachAction
	}
	for _, path := range []string{"store init", "store migrate"} {
		seen[path] = true // TestAdminRunsStoreCommands
	}
	seen["drill recover"] = true   // TestDrillRecoverCallsExactlyItsDeclaredOperations
	seen["mcp"] = true             // TestMCPServerCallsExactlyItsDeclaredOperations
	seen["dashboard"] = true       // TestDashboardRefreshesUnderTheReadersPolicy
	seen["mcp --read-only"] = true // TestReadOnlyMCPServerRunsUnderTheReadersPolicy
	for path := range iam.Commands() {
		if !seen[path] {
			t.Errorf("iam.Commands() declares %q, which no test runs: its operations are unchecked", path)
		}
	}
}

// Each action of the reader's, requester's, operator's and approver's
// policies is needed: with any one removed, some command path of the role
// is denied it and fails as it would on AWS (AccessDenied, a nonzero exit).
func TestEveryActionOfTheCLIRolesIsNeeded(t *testing.T) {
	w := newPeopleWorld(t)
	w.prepare()
	for _, role := range []iam.Role{iam.Reader, iam.Requester, iam.Operator, iam.Approver} {
		full := policyOf(t, role, testTarget)
		for i, st := range full.Statement {
			if st.Sid == "ItemsOwnProposalsInTransactions" {
				continue // only koshactl mcp writes them: TestMCPServerCallsExactlyItsDeclaredOperations
			}
			for _, action := range st.Action {
				broken := withoutAction(*full, i, action)
				failed := ""
				for _, s := range declaringFirst(w.cliSteps(t), st, action) {
					if !slices.Contains(iam.RolePaths[role], s.path) {
						continue
					}
					w.setupStep(s)
					w.enf.SetPolicy(broken)
					r := w.Run(s.args()...)
					w.proxy.LoseAnswers(nil)
					denied := w.enf.TakeDenials()
					if action == iam.SNSPublish {
						// A notification never fails the change: denied
						// Publish is a warning line, the command exits 0.
						if r.Code == 0 && len(denied) > 0 && denied[0].Action == action && deniedNotification(r.Stderr) {
							failed = s.path
							break
						}
						continue
					}
					if r.Code != 0 && len(denied) > 0 && denied[0].Action == action && mentionsDenial(r.Stderr) {
						failed = s.path
						break
					}
				}
				if failed == "" {
					t.Errorf("%s without %s (statement %s): every command path still passes; the action is superfluous", role, action, st.Sid)
				}
			}
		}
	}
}

// declaringFirst is steps with those whose path declares action on an item
// prefix of st first (each part in its order): the step that fails without
// the action is usually among them, and the rest are still tried after.
func declaringFirst(steps []cliStep, st iam.Statement, action string) []cliStep {
	keys := st.Condition[iam.LeadingKeysCondition]["dynamodb:LeadingKeys"]
	declares := func(n iam.Need) bool {
		return n.Action == action && (len(keys) == 0 || slices.ContainsFunc(keys, func(k string) bool {
			return n.Prefix != "" && strings.HasPrefix(n.Prefix, strings.TrimSuffix(k, "*"))
		}))
	}
	var first, rest []cliStep
	for _, s := range steps {
		if slices.ContainsFunc(iam.Commands()[s.path], declares) {
			first = append(first, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(first, rest...)
}

// deniedNotification reports one warning line saying a notification was
// refused by SNS's authorization.
func deniedNotification(stderr string) bool {
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "warning: notification ") && strings.Contains(l, "AuthorizationError") && strings.Contains(l, "the change stands") {
			n++
		}
	}
	return n == 1
}

// mentionsDenial reports an error line that says access was denied.
func mentionsDenial(stderr string) bool {
	l := strings.ToLower(stderr)
	return strings.Contains(l, "denied") || strings.Contains(l, "not authorized")
}

// The policy of each role is valid IAM JSON that grants exactly the union of
// its command paths' operations on the context's resources, item actions
// limited to their prefixes.
func TestPolicyGrantsExactlyEachRolesOperations(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.WriteConfig(fmt.Sprintf(contextYAML, "prod", "prod", "eu-west-1", "http://127.0.0.1:1", "http://127.0.0.1:1", "http://127.0.0.1:1"))
	target := iam.Target{Region: "eu-west-1", Account: "123456789012", Table: "kosha-control", Secret: "kosha/chaos/dev", //nolint:gosec // G101: a secret's name, not its value
		Topics: []string{notifyTopic}}
	table := "arn:aws:dynamodb:eu-west-1:123456789012:table/kosha-control"
	for _, role := range iam.Roles {
		r := e.MustRun(0, "iam", "policy", "--role", string(role), "--account", "123456789012")
		var doc iam.Document
		dec := json.NewDecoder(strings.NewReader(r.Stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: not a policy document: %v\n%s", role, err, r.Stdout)
		}
		if doc.Version != "2012-10-17" || len(doc.Statement) == 0 {
			t.Errorf("%s: version %q, %d statements", role, doc.Version, len(doc.Statement))
		}
		sids := map[string]bool{}
		for _, s := range doc.Statement {
			if s.Sid == "" || strings.Trim(s.Sid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" || sids[s.Sid] {
				t.Errorf("%s: Sid %q is not a unique alphanumeric id", role, s.Sid)
			}
			sids[s.Sid] = true
			for _, res := range s.Resource {
				switch res {
				case table, table + "/index/*":
					if !strings.HasPrefix(s.Action[0], "dynamodb:") {
						t.Errorf("%s: %v on the table", role, s.Action)
					}
				case "arn:aws:secretsmanager:eu-west-1:123456789012:secret:kosha/chaos/dev-??????":
					if !strings.HasPrefix(s.Action[0], "secretsmanager:") {
						t.Errorf("%s: %v on the secret", role, s.Action)
					}
				case notifyTopic:
					if len(s.Action) != 1 || s.Action[0] != iam.SNSPublish {
						t.Errorf("%s: %v on the notification topic", role, s.Action)
					}
				case "*":
					if len(s.Action) != 1 || s.Action[0] != iam.GetMetricData && s.Action[0] != iam.DescribeAlarms {
						t.Errorf("%s: %v on every resource", role, s.Action)
					}
				default:
					t.Errorf("%s: unexpected resource %q", role, res)
				}
			}
			if _, keyed := s.Condition[iam.LeadingKeysCondition]; keyed != strings.HasPrefix(s.Sid, "Items") {
				t.Errorf("%s: statement %s condition %v", role, s.Sid, s.Condition)
			}
		}
		granted, err := iamtest.Grants(doc, target)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		var want []iam.Need
		for _, n := range role.Needs() {
			if g := n.AsGranted(); !slices.Contains(want, g) {
				want = append(want, g)
			}
		}
		if d := sameNeeds(granted, want); d != "" {
			t.Errorf("%s policy: %s", role, d)
		}
	}
	// The reader changes nothing and never reads the chaos key.
	for _, n := range iam.Reader.Needs() {
		if !slices.Contains([]string{iam.GetItem, iam.BatchGetItem, iam.Query, iam.Scan, iam.GetMetricData}, n.Action) {
			t.Errorf("reader needs %s", n)
		}
	}
}

func TestPolicyRefusesWhatItCannotRender(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(exitcode.Usage, "iam", "policy", "--role", "reader", "--account", "123456789012")
	if !strings.Contains(r.Stderr, "embedded store") || r.Stdout != "" {
		t.Errorf("local context: %q %q", r.Stdout, r.Stderr)
	}
	e.WriteConfig(fmt.Sprintf(contextYAML, "prod", "prod", "eu-west-1", "http://127.0.0.1:1", "http://127.0.0.1:1", "http://127.0.0.1:1"))
	for _, args := range [][]string{
		{"iam", "policy", "--role", "root", "--account", "123456789012"},
		{"iam", "policy", "--role", "operator", "--account", "123456789012", "--kms-key-arn", "alias/kosha-chaos"},
		{"iam", "policy", "--account", "123456789012"},
		{"iam", "policy", "--role", "reader", "--account", "12345"},
	} {
		if r := e.MustRun(exitcode.Usage, args...); r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("koshactl %s: %q %q", strings.Join(args, " "), r.Stdout, r.Stderr)
		}
	}
	// --jq works on the document like on any structured output.
	r = e.MustRun(0, "iam", "policy", "--role", "reader", "--account", "123456789012", "--jq", "[.Statement[].Action[]] | unique | join(\",\")")
	if r.Stdout != "cloudwatch:GetMetricData,dynamodb:BatchGetItem,dynamodb:GetItem,dynamodb:Query,dynamodb:Scan\n" {
		t.Errorf("reader actions: %q", r.Stdout)
	}
}

// The admin role runs the store commands: init (on a missing table) calls
// exactly what iam.Commands() declares for it, and migrate passes under the
// policy calling nothing undeclared. (UpdateTable, which migrate calls only
// on a table lacking indexes, is not called here: init made every index;
// TestEveryActionOfTheAdminRoleIsNeeded runs migrate on a table without
// them and shows the policy must grant it.)
func TestAdminRunsStoreCommands(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	enf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/koshactl-admin/pipeline")
	sm := newFakeSM(t, e.Clock, enf)
	proxy, rec := dynamoProxy(t, endpoint, sm.URL, "", testTarget, enf)
	e.WriteConfig(fmt.Sprintf(contextYAML, "dev", "dev", moto.Region, proxy.URL, "http://127.0.0.1:1", "http://127.0.0.1:1"))
	full := policyOf(t, iam.Admin, testTarget)
	enf.SetPolicy(full)
	r := e.MustRun(0, "--debug", "store", "init")
	if d := sameNeeds(append(rec.take(), debugNeeds(r.Stderr)...), iam.Commands()["store init"]); d != "" {
		t.Errorf("store init: %s", d)
	}
	r = e.MustRun(0, "--debug", "store", "migrate", "--yes")
	for _, n := range append(rec.take(), debugNeeds(r.Stderr)...) {
		if !slices.Contains(iam.Commands()["store migrate"], n) {
			t.Errorf("store migrate called %s, not in iam.Commands()", n)
		}
	}
	if d := enf.TakeDenials(); len(d) > 0 {
		t.Errorf("store commands as admin: denied %v", d)
	}
}

// Each action of the admin's policy is needed: with any one removed, some
// store command on a table made for it fails with AccessDenied on exactly
// that action. The tables: a missing one for init; a legacy one (no
// indexes) for migrate's ListTagsOfResource and UpdateTable; an indexed one
// holding an audit record and an override without their index attributes
// (as a koshactl older than the indexes wrote them), and one holding a
// decided request and an acknowledged review out of the lists index, for
// the backfill's Scan and PutItems.
func TestEveryActionOfTheAdminRoleIsNeeded(t *testing.T) {
	endpoint := moto.Start(t)
	e := clitest.New(t) // pat's profile is read from the process environment: not parallel
	enf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/koshactl-admin/pipeline")
	sm := newFakeSM(t, e.Clock, enf)
	proxy, _ := dynamoProxy(t, endpoint, sm.URL, "", testTarget, enf)
	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	// pat, an IAM user STS verifies, sets the policy with the proof of it.
	pat := moto.User(t, endpoint, "pat")
	moto.UseProfiles(t, e.Setenv, map[string]aws.Credentials{"pat": pat})
	patID, patARN := moto.Caller(t, endpoint, pat)
	enf.AddCaller(pat.AccessKeyID, iamtest.Caller{UserID: patID, ARN: patARN})
	tables := 0
	// useTable points the contexts at a fresh table name and returns it.
	useTable := func() string {
		tables++
		name := fmt.Sprintf("kosha-admin-%d", tables)
		e.WriteConfig(strings.ReplaceAll(fmt.Sprintf(contextYAML, "dev", "dev", moto.Region, proxy.URL, "http://127.0.0.1:1", "http://127.0.0.1:1")+
			fmt.Sprintf(requestContextYAML, "pat", moto.Region, proxy.URL, "pat", "http://127.0.0.1:1", endpoint, "http://127.0.0.1:1"),
			"table: kosha-control", "table: "+name))
		return name
	}
	allowAll := filepath.Join(t.TempDir(), "allow-all.cedar")
	if err := os.WriteFile(allowAll, []byte("permit (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type scenario struct {
		name  string
		setup func(table string) // unenforced
		args  []string
	}
	scenarios := []scenario{
		{"store init on a missing table", func(string) {}, []string{"store", "init"}},
		{"store migrate on a table without indexes", func(table string) {
			if _, err := client.CreateTable(t.Context(), &dynamodb.CreateTableInput{
				TableName:            aws.String(table),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
				BillingMode:          types.BillingModePayPerRequest,
			}); err != nil {
				t.Fatal(err)
			}
		}, []string{"store", "migrate", "--yes"}},
		{"store migrate on records older than the indexes", func(table string) {
			e.MustRun(0, "store", "init")
			e.MustRun(0, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m")
			// Strip the index attributes, as an older koshactl wrote them.
			out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table)})
			if err != nil {
				t.Fatal(err)
			}
			stripped := 0
			for _, it := range out.Items {
				pk := it["pk"].(*types.AttributeValueMemberS).Value
				if !strings.HasPrefix(pk, "audit#") && !strings.HasPrefix(pk, "breaker#") {
					continue
				}
				if _, err := client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table),
					Key:              map[string]types.AttributeValue{"pk": it["pk"]},
					UpdateExpression: aws.String("REMOVE ix_audit_day, ix_audit_subject, ix_audit_actor, ix_override, ix_list, ix_list_sort")}); err != nil {
					t.Fatal(err)
				}
				stripped++
			}
			if stripped < 2 {
				t.Fatalf("force-open wrote %d audit records and overrides, want both", stripped)
			}
		}, []string{"store", "migrate", "--yes"}},
		// A request decided and a review acknowledged by a koshactl before
		// decided ones stayed in the lists index: the backfill's PutItems
		// of request# and review#.
		{"store migrate on requests and reviews decided before", func(table string) {
			e.MustRun(0, "store", "init")
			for pk, status := range map[string]string{"request#0a1b2c3d4e5f": "denied", "review#0a1b2c3d4e5f": "acknowledged"} {
				if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: pk}, "status": &types.AttributeValueMemberS{Value: status},
					"created_at": &types.AttributeValueMemberN{Value: "1796080800000"}, "write_id": &types.AttributeValueMemberS{Value: "w-old"}}}); err != nil {
					t.Fatal(err)
				}
			}
		}, []string{"store", "migrate", "--yes"}},
		// The table's change policy, on a table made for it; and the same
		// text again (its proof read: nothing to write).
		{"policy set", func(string) {
			enf.SetPolicy(nil)
			e.MustRun(0, "store", "init")
		}, []string{"--context", "pat", "policy", "set", allowAll, "--reason", "iam test"}},
		{"policy set, its answer lost", func(string) {
			enf.SetPolicy(nil)
			e.MustRun(0, "store", "init")
			loseChange(proxy, nil) // settled by reading its record
		}, []string{"--context", "pat", "policy", "set", allowAll, "--reason", "iam test"}},
		{"policy set again", func(string) {
			enf.SetPolicy(nil)
			e.MustRun(0, "store", "init")
			e.MustRun(0, "--context", "pat", "policy", "set", allowAll, "--reason", "iam test")
		}, []string{"--context", "pat", "policy", "set", allowAll, "--reason", "iam test"}},
	}
	// With the whole policy each scenario passes: the scenarios reach
	// every call.
	for _, sc := range scenarios {
		table := useTable()
		tg := testTarget
		tg.Table = table
		enf.SetPolicy(nil)
		sc.setup(table)
		enf.SetPolicy(policyOf(t, iam.Admin, tg))
		r := e.Run(sc.args...)
		if d := enf.TakeDenials(); len(d) > 0 {
			t.Errorf("%s as admin: denied %v\n%s", sc.name, d, r.Stderr)
		}
	}
	full := policyOf(t, iam.Admin, testTarget)
	for i, st := range full.Statement {
		for _, action := range st.Action {
			if action == iam.SNSPublish {
				// A notification never fails a change (policy set warns and
				// exits 0); the notify statement is checked for the
				// operator, whose policy renders it the same way.
				continue
			}
			failed := ""
			for _, sc := range scenarios {
				table := useTable()
				tg := testTarget
				tg.Table = table
				enf.SetPolicy(nil)
				sc.setup(table)
				doc := policyOf(t, iam.Admin, tg)
				enf.SetPolicy(withoutAction(*doc, i, action))
				r := e.Run(sc.args...)
				denied := enf.TakeDenials()
				if r.Code != 0 && len(denied) > 0 && denied[0].Action == action && mentionsDenial(r.Stderr) {
					failed = sc.name
					break
				}
			}
			if failed == "" {
				t.Errorf("admin without %s (statement %s): every store command still passes; the action is superfluous", action, st.Sid)
			}
		}
	}
}

// A chaos secret under a customer-managed KMS key: the operator's policy
// with --kms-key-arn reads and rotates it; without the KMS statement
// Secrets Manager answers AccessDenied ("Access to KMS is not allowed").
func TestChaosKeyUnderCustomerManagedKMSKey(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	key := "arn:aws:kms:" + moto.Region + ":123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	w.sm.SetKMSKey("kosha/chaos/dev", key)
	tg := testTarget
	tg.KMSKey = key
	withKMS := policyOf(t, iam.Operator, tg)
	w.enf.SetPolicy(withKMS)
	w.MustRun(0, "chaos", "key", "rotate")
	w.MustRun(0, "chaos", "key", "id")
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Fatalf("denied %v", d)
	}
	w.enf.SetPolicy(policyOf(t, iam.Operator, testTarget))
	if r := w.Run("chaos", "key", "id"); r.Code == 0 || !mentionsDenial(r.Stderr) {
		t.Errorf("without the KMS statement: exit %d\n%s", r.Code, r.Stderr)
	}
	if d := w.enf.TakeDenials(); len(d) != 1 || d[0].Action != iam.KMSDecrypt {
		t.Errorf("denied %v, want kms:Decrypt", d)
	}
	r := w.MustRun(0, "iam", "policy", "--role", "operator", "--account", "123456789012", "--kms-key-arn", key,
		"--jq", `.Statement[] | select(.Sid == "ChaosKeyKMS") | [.Action[], .Condition.StringEquals["kms:ViaService"][0]] | join(",")`)
	if r.Stdout != "kms:Decrypt,kms:GenerateDataKey,secretsmanager."+moto.Region+".amazonaws.com\n" {
		t.Errorf("KMS statement: %q", r.Stdout)
	}
}
