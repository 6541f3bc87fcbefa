package iam_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/factory/base"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// runReal runs koshactl in process on the wall clock (drills and the
// sandbox wait for real time) and returns what it printed.
func runReal(ctx context.Context, e *clitest.Env, stderr *syncbuf.Buffer, args ...string) (string, int) {
	ios, _, out, _ := iostreams.Test()
	ios.ErrOut = stderr
	code := root.Run(ctx, factory.NewWith(ios, clock.Real{}, base.WithEnviron(e.Environ())), args)
	return out.String(), code
}

// drillWorld is a DynamoDB context dev for the CLI (drill runs) and
// another, dp, on the same table for the reference data plane (koshactl
// sandbox, running): each through its own enforcing DynamoDB proxy and its
// own Secrets Manager endpoint (one fake, the same secret), enf holding the
// drill-runner's policy and dpEnf the data plane's, as two IAM principals.
type drillWorld struct {
	e             *clitest.Env
	enf, dpEnf    *iamtest.Enforcer
	cw            *cwfake.Server
	cliRec, dpRec *recorder
	// cliProxy and dpProxy are the two principals' DynamoDB endpoints.
	cliProxy, dpProxy *iamtest.Proxy
	// endpoint is moto's, where the table is read and written unenforced.
	endpoint string
	dir      string
	sbErr    *syncbuf.Buffer
	// quick shortens the example drills' waits (30 s to 5 s, rollbacks to
	// 2 s) for runs that are meant to fail: a denied lever then fails in
	// seconds rather than after the drill's full patience.
	quick bool
}

func newDrillWorld(t *testing.T) *drillWorld {
	t.Helper()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	enf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/koshactl-drill-runner/ci")
	dpEnf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/kosha-gateway/task")
	sm := newFakeSM(t, e.Clock, enf)
	cw := newFakeCW(t, enf)
	sns := newFakeSNS(t, enf)
	dpProxy, dpRec := dynamoProxy(t, endpoint, sm.Principal(dpEnf.Check), cw.URL, testTarget, dpEnf)
	cliProxy, cliRec := dynamoProxy(t, endpoint, sm.URL, cw.URL, testTarget, enf)
	e.WriteConfig(fmt.Sprintf(contextYAML, "dev", "dev", moto.Region, cliProxy.URL, sns.URL(), cw.URL) +
		strings.SplitN(fmt.Sprintf(contextYAML, "dp", "dp", moto.Region, dpProxy.URL, sns.URL(), cw.URL), "\n", 3)[2])
	e.MustRun(0, "store", "init")
	e.MustRun(0, "chaos", "key", "rotate")
	cliRec.take()
	w := &drillWorld{e: e, enf: enf, dpEnf: dpEnf, cw: cw, cliRec: cliRec, dpRec: dpRec, cliProxy: cliProxy, dpProxy: dpProxy,
		dir: t.TempDir(), sbErr: &syncbuf.Buffer{}, endpoint: endpoint}

	// The data plane: the sandbox on context dp, chaos on, until the test
	// ends. Four times the LLD's speed: the drills' HTTP steps go through
	// the fleet's deadlines, which at 20x (a 50 ms attempt cap) a busy CI
	// machine running moto beside the race detector misses, and at 10x (a
	// 1 s tool budget) make test-stress's four times the load did: a
	// search answered in 1.5 s was core-api's deadline exceeded.
	addrFile := filepath.Join(w.dir, "url")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		_, code := runReal(ctx, w.e, w.sbErr, "--debug", "--context", "dp", "sandbox", "--listen", "127.0.0.1:0", "--addr-file", addrFile,
			"--time-scale", "4", "--profile", "instant", "--chaos")
		done <- code
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
	var url string
	if err := wait.For(t.Context(), "the sandbox to serve its address file", func() bool {
		if b, err := os.ReadFile(addrFile); err == nil {
			url = strings.TrimSpace(string(b))
		}
		if url != "" {
			return true
		}
		select {
		case code := <-done:
			done <- code // for the cleanup's receive
			t.Fatalf("sandbox exited %d:\n%s", code, w.sbErr.String())
		default:
		}
		return false
	}); err != nil {
		t.Fatalf("%v:\n%s", err, w.sbErr.String())
	}
	e.Setenv("SANDBOX_URL", url) // the drills' ${env.SANDBOX_URL}
	return w
}

// drillRun is one drill the drill-runner runs against the data plane.
type drillRun struct {
	name string
	run  func(w *drillWorld, t *testing.T) (code int, stderr string)
}

// drills are the example drills (docs/drills, as make test runs them,
// pinned to context local and run here on dev), one more that reads its
// gauges from CloudWatch (and again with --request), and the alarm drill, whose alarm flips mid-run;
// then two whose store loses an answer: openai-outage's clear (settled by
// reading its record) and screening-sim-errors' first data-plane record
// (settled by reading it). Each returns its exit code; want is the code of
// a drill that did what it should.
var drills = []struct {
	drillRun
	want int
}{
	{drillRun{"openai-outage", func(w *drillWorld, t *testing.T) (int, string) { return w.runExample(t, "openai-outage") }}, 0},
	{drillRun{"screening-sim-errors", func(w *drillWorld, t *testing.T) (int, string) { return w.runExample(t, "screening-sim-errors") }}, 0},
	{drillRun{"flooding-client", func(w *drillWorld, t *testing.T) (int, string) { return w.runExample(t, "flooding-client") }}, 0},
	{drillRun{"cloudwatch-gauges", func(w *drillWorld, t *testing.T) (int, string) { return w.runCloudWatchDrill(t) }}, 0},
	// With --request, the run reads the table's policy and the request in
	// one batch read (the table has no policy here: it goes on).
	{drillRun{"cloudwatch-gauges --request", func(w *drillWorld, t *testing.T) (int, string) {
		return w.runCloudWatchDrill(t, "--request", "0123456789ab")
	}}, 0},
	// Stopped by the alarm: exit 1.
	{drillRun{"alarm-stop", (*drillWorld).runAlarmDrill}, 1},
	// On a table whose policy asks an approval of its lever, with its
	// approved request: the run reads the request's proofs, its closed
	// marker and the policy's proof, in a second batch.
	{drillRun{"a bucket set with its approved request", (*drillWorld).runApprovedDrill}, 0},
	{drillRun{"openai-outage, its clear's answer lost", func(w *drillWorld, t *testing.T) (int, string) {
		loseChange(w.cliProxy, isClear)
		defer w.cliProxy.LoseAnswers(nil)
		lost := w.cliProxy.Lost()
		code, stderr := w.runExample(t, "openai-outage")
		if w.cliProxy.Lost() == lost {
			t.Errorf("openai-outage: no clear's answer was lost")
		}
		return code, stderr
	}}, 0},
	{drillRun{"screening-sim-errors, a data-plane record's answer lost", func(w *drillWorld, t *testing.T) (int, string) {
		loseChange(w.dpProxy, nil)
		defer w.dpProxy.LoseAnswers(nil)
		code, stderr := w.runExample(t, "screening-sim-errors")
		// The data plane writes its records off the request path: wait
		// for it to read the lost one back.
		wait.Until(t, "the data plane to read back a record whose answer was lost", func() bool {
			return w.dpRec.has(iam.Need{Action: iam.GetItem, Prefix: iam.DataPlaneItems})
		})
		return code, stderr
	}}, 0},
}

func (w *drillWorld) runExample(t *testing.T, name string) (int, string) {
	t.Helper()
	file := w.copyDrill(t, name)
	stderr := &syncbuf.Buffer{}
	_, code := runReal(context.Background(), w.e, stderr, "--debug", "drill", "run", file, "--junit", filepath.Join(w.dir, name+".xml"))
	return code, stderr.String()
}

func (w *drillWorld) runCloudWatchDrill(t *testing.T, args ...string) (int, string) {
	t.Helper()
	w.cw.Put("openai", "gw-1", time.Now().Add(-30*time.Second), 0)
	file := filepath.Join(w.dir, "cloudwatch.yaml")
	drillYAML := "version: 1\nname: cloudwatch-gauges\ncontext: dev\ntimeout: 1m\nsteps:\n" +
		"  - id: closed\n    name: openai is closed per CloudWatch\n    assert:\n      breaker:\n        dependency: openai\n        state: closed\n"
	if err := os.WriteFile(file, []byte(drillYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &syncbuf.Buffer{}
	_, code := runReal(context.Background(), w.e, stderr, append([]string{"--debug", "drill", "run", file}, args...)...)
	return code, stderr.String()
}

// runApprovedDrill sets, unenforced, a policy asking one approval of a
// lever, asks for a drill that sets a bucket (its request made as dev's
// koshactl makes it) and has bob approve it (as his koshactl would, STS
// having verified him); then runs the drill with --request under the
// policy enforced, and takes the policy away again.
func (w *drillWorld) runApprovedDrill(t *testing.T) (int, string) {
	t.Helper()
	enforced := w.enf.Policy()
	w.enf.SetPolicy(nil)
	file := filepath.Join(w.dir, "approved.yaml")
	// A bucket of its own: no other drill, nor the fleet's breakers, sees it.
	src := "version: 1\nname: approved-set\ncontext: dev\ntimeout: 1m\nsteps:\n  - id: set\n    ratelimit.set: {client: iam-approved, tokens: 3, reason: iam test}\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(w.dir, "four-eyes.cedar")
	if err := os.WriteFile(policyFile, []byte(fourEyesAll), 0o600); err != nil {
		t.Fatal(err)
	}
	w.e.MustRun(0, "policy", "set", policyFile, "--reason", "iam test")
	// The drill runs on the wall clock: its request is made and approved
	// on it too.
	out, code := runReal(context.Background(), w.e, &syncbuf.Buffer{}, "drill", "request", file, "--reason", "iam test", "-o", "json")
	if code != exitcode.Pending {
		t.Fatalf("drill request: exit %d\n%s", code, out)
	}
	id := requestID(t, out)
	st := dynamo.NewFromConfig(moto.Config(t, w.endpoint), "kosha-control")
	svc := approval.NewService(st, clock.Real{}, levertest.Levers(st, clock.Real{}, nil), "dev")
	r, err := svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	bob := audit.Identity{Actor: moto.UserARN("bob"), Source: audit.ActorSTS, UserID: "AIDABOB"}
	if res, err := svc.Approve(context.Background(), audit.NewLog(st, clock.Real{}, "dev"), approval.Approval{ID: id, Approver: bob, SHA256: r.SHA256}); err != nil || !res.Authorized {
		t.Fatalf("bob's approval of the drill: %+v, %v", res, err)
	}
	w.cliRec.take()
	w.enf.SetPolicy(enforced)
	stderr := &syncbuf.Buffer{}
	_, code = runReal(context.Background(), w.e, stderr, "--debug", "drill", "run", file, "--request", id)
	w.enf.SetPolicy(nil)
	if err := st.Delete(context.Background(), "policy#table", store.Always()); err != nil {
		t.Fatal(err)
	}
	w.enf.SetPolicy(enforced)
	return code, stderr.String()
}

// runAlarmDrill runs alarm-stop and flips its alarm once the levers are
// pulled and the drill soaks: it stops and rolls back (exit 1). A drill
// that exits before it soaks returns its code at once.
func (w *drillWorld) runAlarmDrill(t *testing.T) (int, string) {
	t.Helper()
	since := time.Now().UTC().Truncate(time.Second)
	w.cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Reason: "fine", Updated: since})
	stderr := &syncbuf.Buffer{}
	file := w.copyDrill(t, "alarm-stop")
	jpath := filepath.Join(w.dir, "alarm.json")
	_ = os.Remove(jpath)
	alarmDone := make(chan int, 1)
	go func() {
		_, code := runReal(context.Background(), w.e, stderr, "--debug", "drill", "run", file, "--journal", jpath)
		alarmDone <- code
	}()
	ended, code := false, 0
	wait.Until(t, "the alarm drill to soak (step 3 of 4 running) or end", func() bool {
		select {
		case code = <-alarmDone:
			ended = true
			return true
		default:
		}
		var j drill.Journal
		b, err := os.ReadFile(jpath)
		return err == nil && json.Unmarshal(b, &j) == nil && len(j.Steps) == 4 && j.Steps[2].Status == drill.StatusRunning
	})
	if ended {
		if code == 1 {
			code = -1 // it failed before its levers were pulled: not the alarm's stop
		}
		return code, stderr.String()
	}
	w.cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "ALARM", Reason: "Threshold Crossed", Updated: since.Add(time.Second)})
	select {
	case code := <-alarmDone:
		if code == 1 && !strings.Contains(stderr.String(), "held: ") {
			code = -1 // it failed, but no stop condition held
		}
		return code, stderr.String()
	case <-time.After(wait.Ceiling):
		t.Fatal("the alarm drill did not stop")
	}
	return -1, ""
}

// reset undoes what a failed drill may have left (an override it could
// not clear, a drained bucket), unenforced.
func (w *drillWorld) reset(t *testing.T) {
	t.Helper()
	w.enf.SetPolicy(nil)
	w.dpEnf.SetPolicy(nil)
	w.e.Run("breaker", "clear", "--all", "--reason", "iam test reset")
	w.e.Run("ratelimit", "reset", "agent-1", "--reason", "iam test reset")
	// A new chaos key, which the data plane has not cached: its next
	// header makes it read the secret again.
	w.e.Clock.Advance(time.Hour)
	w.e.MustRun(0, "chaos", "key", "rotate")
	w.enf.TakeDenials()
	w.dpEnf.TakeDenials()
}

// The example drills (docs/drills, as make test runs them) on a DynamoDB
// context against the reference data plane (koshactl sandbox) on another
// context of the same table: the sandbox calls exactly what iam.Commands()
// declares for "sandbox" (the data-plane role), and the drills, with one
// more that reads its gauges from CloudWatch, exactly what it declares for
// "drill run" (the drill-runner role).
//
// Then each action of the two policies is shown needed: with any one
// removed (the other principal keeping its full policy), the first drill
// that called it is run again, and the action is what is denied. A drill
// then fails; the data plane, which serves on through a denied read or
// write as it must, says so in its log (and the drill checking its
// behavior fails where it can tell).
func TestDrillAndDataPlaneRolesCallExactlyAndNeedEachAction(t *testing.T) {
	t.Parallel()
	w := newDrillWorld(t)
	w.enf.SetPolicy(policyOf(t, iam.DrillRunner, testTarget))
	w.dpEnf.SetPolicy(policyOf(t, iam.DataPlane, testTarget))
	var drillNeeds, dpNeeds []iam.Need
	// calledBy is, per role and action, the drills that called it, in order.
	calledBy := map[iam.Role]map[string][]int{iam.DrillRunner: {}, iam.DataPlane: {}}
	for i, d := range drills {
		logFrom := len(w.sbErr.String())
		began := time.Now()
		code, stderr := d.run(w, t)
		t.Logf("drill %s: %v", d.name, time.Since(began))
		if code != d.want {
			t.Fatalf("drill %s on a DynamoDB context: exit %d, want %d\n%s", d.name, code, d.want, stderr)
		}
		cli := append(w.cliRec.take(), debugNeeds(stderr)...)
		dp := append(w.dpRec.take(), debugNeeds(w.sbErr.String()[logFrom:])...)
		for role, ns := range map[iam.Role][]iam.Need{iam.DrillRunner: cli, iam.DataPlane: dp} {
			for _, n := range ns {
				key := n.Action + " " + n.AsGranted().Prefix
				if ds := calledBy[role][key]; len(ds) == 0 || ds[len(ds)-1] != i {
					calledBy[role][key] = append(ds, i)
				}
			}
		}
		drillNeeds, dpNeeds = union(drillNeeds, cli), union(dpNeeds, dp)
	}
	if d := sameNeeds(drillNeeds, iam.Commands()["drill run"]); d != "" {
		t.Errorf("drill run: %s", d)
	}
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("drill run as drill-runner: denied %v", d)
	}
	if d := sameNeeds(dpNeeds, iam.Commands()["sandbox"]); d != "" {
		t.Errorf("sandbox (the data plane): %s", d)
	}
	if d := w.dpEnf.TakeDenials(); len(d) > 0 {
		t.Errorf("sandbox as data-plane: denied %v", d)
	}
	if t.Failed() {
		return
	}

	w.quick = true
	for _, role := range []iam.Role{iam.DrillRunner, iam.DataPlane} {
		full := policyOf(t, role, testTarget)
		for i, st := range full.Statement {
			prefix := ""
			if c, ok := st.Condition[iam.LeadingKeysCondition]; ok {
				prefix = strings.TrimSuffix(c["dynamodb:LeadingKeys"][0], "*")
			}
			for _, action := range st.Action {
				called, ok := calledBy[role][action+" "+prefix]
				if !ok && role == iam.DrillRunner && slices.ContainsFunc(iam.Commands()["drill recover"], func(n iam.Need) bool {
					return n.Action == action && n.AsGranted().Prefix == prefix
				}) {
					continue // drill recover's: TestDrillRecoverCallsExactlyItsDeclaredOperations removes it
				}
				if !ok {
					t.Errorf("%s: no drill called %s %s (statement %s): the action is superfluous", role, action, prefix, st.Sid)
					continue
				}
				// The drills that called the action, in order, until one
				// fails without it: a call that never fails a change (a
				// notification, the impact's rates read before a force)
				// is needed by a later drill (one that waits on the gauges).
				var passed []string
				for _, di := range called {
					d := drills[di]
					w.reset(t)
					enf := w.enf
					if role == iam.DataPlane {
						enf = w.dpEnf
						w.enf.SetPolicy(policyOf(t, iam.DrillRunner, testTarget))
					} else {
						w.dpEnf.SetPolicy(policyOf(t, iam.DataPlane, testTarget))
					}
					enf.SetPolicy(withoutAction(*full, i, action))
					logFrom := len(w.sbErr.String())
					began := time.Now()
					code, stderr := d.run(w, t)
					t.Logf("%s without %s: drill %s exit %d in %v", role, action, d.name, code, time.Since(began))
					denied := enf.TakeDenials()
					said := stderr
					if role == iam.DataPlane {
						said = w.sbErr.String()[logFrom:]
					}
					if len(denied) == 0 || denied[0].Action != action {
						t.Errorf("%s without %s (statement %s): drill %s was denied %v, want %s first", role, action, st.Sid, d.name, denied, action)
						break
					}
					if !mentionsDenial(said) {
						t.Errorf("%s without %s (statement %s): drill %s (exit %d) and its log do not say access was denied:\n%s",
							role, action, st.Sid, d.name, code, said)
						break
					}
					if role == iam.DrillRunner && code == d.want && action != iam.SNSPublish {
						// A notification never fails a change: without
						// Publish the drill passes, and the denial and its
						// warning line above are what show the action is
						// needed.
						passed = append(passed, d.name)
						continue
					}
					passed = nil
					break
				}
				if len(passed) > 0 {
					t.Errorf("%s without %s (statement %s): every drill that calls it still passes (%s)", role, action, st.Sid, strings.Join(passed, ", "))
				}
			}
		}
	}
	w.reset(t)
}

func union(a, b []iam.Need) []iam.Need {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	return a
}

// copyDrill writes the example drill name, pinned to context local, into
// the world's directory pinned to dev (its waits shortened when w.quick),
// and returns its path.
func (w *drillWorld) copyDrill(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "drills", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "\ncontext: local\n", "\ncontext: dev\n", 1)
	if w.quick {
		text = quickWaits.ReplaceAllString(text, "$1: 5s")
		text = strings.Replace(text, "\ntimeout: ", "\nrollback_timeout: 2s\ntimeout: ", 1)
	}
	file := filepath.Join(w.dir, name+".yaml")
	//nolint:gosec // G703: file is under t.TempDir(), named from a fixed list
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

var quickWaits = regexp.MustCompile(`\b(within|timeout): 30s\b`)
