package iam_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
)

// awsWorld is one DynamoDB context on dynalite (through a recording proxy),
// its chaos secret in a fake Secrets Manager and its gauges in a fake
// CloudWatch.
type awsWorld struct {
	*clitest.Env
	rec *recorder
	cw  *cwfake.Server
}

const contextYAML = `current-context: %s
contexts:
  %s:
    store:
      dynamodb:
        table: kosha-control
        region: %s
        endpoint-url: %s
        static-credentials: true
    dependencies: [openai, screening-sim, core-api]
    chaos:
      secret-id: kosha/chaos/dev
    metrics:
      cloudwatch:
        endpoint-url: %s
`

func newAWSWorld(t *testing.T) *awsWorld {
	t.Helper()
	endpoint := dynalite.Start(t)
	e := clitest.New(t)
	sm := newFakeSM(t, e.Clock)
	proxy, rec := dynamoProxy(t, endpoint, sm.URL)
	cw := cwfake.New(t)
	e.WriteConfig(fmt.Sprintf(contextYAML, "dev", "dev", dynalite.Region, proxy, cw.URL))
	e.MustRun(0, "store", "init")
	rec.take()
	return &awsWorld{Env: e, rec: rec, cw: cw}
}

// run runs args with --debug and returns what it asked of AWS.
func (w *awsWorld) run(t *testing.T, args ...string) []iam.Need {
	t.Helper()
	w.rec.take()
	r := w.MustRun(0, append([]string{"--debug"}, args...)...)
	return append(w.rec.take(), debugNeeds(r.Stderr)...)
}

// Every command path in iam.Commands, run against dynalite and the fakes,
// calls exactly the operations the table declares for it: what a role's
// policy grants is what its commands do.
func TestCommandsCallExactlyTheirDeclaredOperations(t *testing.T) {
	w := newAWSWorld(t)
	w.cw.Put("openai", "gw-1", clitest.Epoch.Add(-30*time.Second), 0)
	w.MustRun(0, "chaos", "key", "rotate") // a first key, so sign and verify have one
	w.MustRun(0, "ratelimit", "drain", "agent-1", "--reason", "setup")

	var header string
	steps := []struct {
		path string
		args []string
	}{
		{"breaker force-open", []string{"breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m"}},
		{"breaker get", []string{"breaker", "get", "openai"}},
		{"breaker list", []string{"breaker", "list"}},
		{"breaker list --scan", []string{"breaker", "list", "--scan"}},
		{"breaker status", []string{"breaker", "status"}},
		{"breaker clear", []string{"breaker", "clear", "openai", "--reason", "iam test"}},
		{"ratelimit get", []string{"ratelimit", "get", "agent-1"}},
		{"ratelimit list", []string{"ratelimit", "list"}},
		{"ratelimit reset", []string{"ratelimit", "reset", "agent-1", "--reason", "iam test"}},
		{"ratelimit drain", []string{"ratelimit", "drain", "agent-1", "--reason", "iam test"}},
		{"ratelimit set", []string{"ratelimit", "set", "agent-1", "--tokens", "5", "--reason", "iam test"}},
		{"audit list", []string{"audit", "list"}},
		{"audit list --scan", []string{"audit", "list", "--scan"}},
		{"chaos key id", []string{"chaos", "key", "id"}},
		{"chaos sign", []string{"chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value"}},
		{"chaos verify", nil}, // args filled in from sign's header
		{"chaos key rotate", []string{"chaos", "key", "rotate"}}, // the clock is past the minimum key age (below)
	}
	seen := map[string]bool{}
	for _, s := range steps {
		args := s.args
		if s.path == "chaos verify" {
			args = []string{"chaos", "verify", header}
		}
		if s.path == "chaos key rotate" {
			w.Clock.Advance(time.Hour)
		}
		if s.path == "chaos sign" {
			r := w.MustRun(0, args...)
			header = strings.TrimSpace(r.Stdout)
		}
		got := w.run(t, args...)
		if d := sameNeeds(got, iam.Commands[s.path]); d != "" {
			t.Errorf("koshactl %s: %s", s.path, d)
		}
		seen[s.path] = true
	}
	// clear --all scans for every override, then clears each.
	w.MustRun(0, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m")
	w.MustRun(0, "breaker", "force-open", "core-api", "--reason", "iam test", "--for", "10m")
	if d := sameNeeds(w.run(t, "breaker", "clear", "--all", "--reason", "iam test"), iam.Commands["breaker clear --all"]); d != "" {
		t.Errorf("koshactl breaker clear --all: %s", d)
	}
	seen["breaker clear --all"] = true

	for _, path := range []string{"drill run", "sandbox"} {
		seen[path] = true // TestDrillAndDataPlaneCallExactlyTheirDeclaredOperations
	}
	for path := range iam.Commands {
		if !seen[path] {
			t.Errorf("iam.Commands declares %q, which no test runs: its operations are unchecked", path)
		}
	}
}

// The policy of each role is valid IAM JSON that grants exactly the union of
// its command paths' operations on the context's resources, item actions
// limited to their prefixes.
func TestPolicyGrantsExactlyEachRolesOperations(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig(fmt.Sprintf(contextYAML, "prod", "prod", "eu-west-1", "http://127.0.0.1:1", "http://127.0.0.1:1"))
	target := iam.Target{Region: "eu-west-1", Account: "123456789012", Table: "kosha-control", Secret: "kosha/chaos/dev"} //nolint:gosec // G101: a secret's name, not its value
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
				case "*":
					if s.Action[0] != iam.GetMetricData || len(s.Action) != 1 {
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
		granted, err := iam.Grants(doc, target)
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
	e := clitest.New(t)
	r := e.MustRun(cmdutil.ExitUsage, "iam", "policy", "--role", "reader", "--account", "123456789012")
	if !strings.Contains(r.Stderr, "embedded store") || r.Stdout != "" {
		t.Errorf("local context: %q %q", r.Stdout, r.Stderr)
	}
	e.WriteConfig(fmt.Sprintf(contextYAML, "prod", "prod", "eu-west-1", "http://127.0.0.1:1", "http://127.0.0.1:1"))
	for _, args := range [][]string{
		{"iam", "policy", "--role", "admin", "--account", "123456789012"},
		{"iam", "policy", "--account", "123456789012"},
		{"iam", "policy", "--role", "reader", "--account", "12345"},
	} {
		if r := e.MustRun(cmdutil.ExitUsage, args...); r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("koshactl %s: %q %q", strings.Join(args, " "), r.Stdout, r.Stderr)
		}
	}
	// --jq works on the document like on any structured output.
	r = e.MustRun(0, "iam", "policy", "--role", "reader", "--account", "123456789012", "--jq", "[.Statement[].Action[]] | unique | join(\",\")")
	if r.Stdout != "cloudwatch:GetMetricData,dynamodb:BatchGetItem,dynamodb:GetItem,dynamodb:Query,dynamodb:Scan\n" {
		t.Errorf("reader actions: %q", r.Stdout)
	}
}
