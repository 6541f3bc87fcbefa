package iam_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// runReal runs koshactl in process on the wall clock (drills and the
// sandbox wait for real time) and returns what it printed.
func runReal(ctx context.Context, stderr *syncbuf.Buffer, args ...string) (string, int) {
	ios, _, out, _ := iostreams.Test()
	ios.ErrOut = stderr
	code := root.Run(ctx, factory.NewWith(ios, clock.Real{}), args)
	return out.String(), code
}

// The example drills (docs/drills, as make test runs them) on a DynamoDB
// context against the reference data plane (koshactl sandbox) on another
// context of the same table: the sandbox calls exactly what iam.Commands
// declares for "sandbox" (the data-plane role), and the drills, with one
// more that reads its gauges from CloudWatch, exactly what it declares for
// "drill run" (the drill-runner role).
func TestDrillAndDataPlaneCallExactlyTheirDeclaredOperations(t *testing.T) {
	endpoint := dynalite.Start(t)
	e := clitest.New(t)
	// The CLI's enforcer holds the drill-runner policy; the data plane's
	// DynamoDB proxy the data-plane policy. The two share the Secrets
	// Manager and CloudWatch fakes, which enforce the drill-runner's (the
	// data plane's one Secrets Manager grant, GetSecretValue on the secret,
	// is the drill-runner's too).
	enf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/koshactl-drill-runner/ci")
	dpEnf := iamtest.NewEnforcer("arn:aws:sts::123456789012:assumed-role/kosha-gateway/task")
	sm := newFakeSM(t, e.Clock, enf)
	cw := newFakeCW(t, enf)
	sns := newFakeSNS(t, enf)
	dpProxy, dpRec := dynamoProxy(t, endpoint, sm.URL, cw.URL, testTarget, dpEnf)
	cliProxy, cliRec := dynamoProxy(t, endpoint, sm.URL, cw.URL, testTarget, enf)
	e.WriteConfig(fmt.Sprintf(contextYAML, "dev", "dev", dynalite.Region, cliProxy, sns.URL(), cw.URL) +
		strings.SplitN(fmt.Sprintf(contextYAML, "dp", "dp", dynalite.Region, dpProxy, sns.URL(), cw.URL), "\n", 3)[2])
	e.MustRun(0, "store", "init")
	e.MustRun(0, "chaos", "key", "rotate")
	cliRec.take()
	enf.SetPolicy(policyOf(t, iam.DrillRunner, testTarget))
	dpEnf.SetPolicy(policyOf(t, iam.DataPlane, testTarget))

	// The data plane: the sandbox on context dp, chaos on.
	addrFile := filepath.Join(t.TempDir(), "url")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sbErr := &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		_, code := runReal(ctx, sbErr, "--debug", "--context", "dp", "sandbox", "--listen", "127.0.0.1:0", "--addr-file", addrFile,
			"--time-scale", "20", "--profile", "instant", "--chaos")
		done <- code
	}()
	var url string
	deadline := time.Now().Add(wait.Ceiling)
	for url == "" {
		if b, err := os.ReadFile(addrFile); err == nil {
			url = strings.TrimSpace(string(b))
		}
		select {
		case code := <-done:
			t.Fatalf("sandbox exited %d:\n%s", code, sbErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox did not start:\n%s", sbErr.String())
		}
		time.Sleep(10 * time.Millisecond) // poll the address file for the serving state
	}
	t.Setenv("SANDBOX_URL", url)

	// The example drills, pinned to context local, run here on dev.
	var drillNeeds []iam.Need
	dir := t.TempDir()
	for _, name := range []string{"openai-outage", "screening-sim-errors", "flooding-client"} {
		file := copyDrill(t, dir, name)
		stderr := &syncbuf.Buffer{}
		out, code := runReal(context.Background(), stderr, "--debug", "drill", "run", file, "--junit", filepath.Join(dir, name+".xml"))
		if code != 0 {
			t.Fatalf("drill %s on a DynamoDB context: exit %d\n%s\n%s", name, code, out, stderr.String())
		}
		drillNeeds = union(drillNeeds, append(cliRec.take(), debugNeeds(stderr.String())...))
	}
	// A drill whose gauges come from the context's CloudWatch.
	cw.Put("openai", "gw-1", time.Now().Add(-30*time.Second), 0)
	file := filepath.Join(dir, "cloudwatch.yaml")
	drillYAML := "version: 1\nname: cloudwatch-gauges\ncontext: dev\ntimeout: 1m\nsteps:\n" +
		"  - id: closed\n    name: openai is closed per CloudWatch\n    assert:\n      breaker:\n        dependency: openai\n        state: closed\n"
	if err := os.WriteFile(file, []byte(drillYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &syncbuf.Buffer{}
	if out, code := runReal(context.Background(), stderr, "--debug", "drill", "run", file); code != 0 {
		t.Fatalf("cloudwatch drill: exit %d\n%s\n%s", code, out, stderr.String())
	}
	drillNeeds = union(drillNeeds, append(cliRec.take(), debugNeeds(stderr.String())...))

	// The alarm drill: an alarm flips mid-run and the drill rolls back.
	since := time.Now().UTC().Truncate(time.Second)
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Reason: "fine", Updated: since})
	stderr = &syncbuf.Buffer{}
	file = copyDrill(t, dir, "alarm-stop")
	jpath := filepath.Join(dir, "alarm.json")
	alarmDone := make(chan int, 1)
	go func() {
		_, code := runReal(context.Background(), stderr, "--debug", "drill", "run", file, "--journal", jpath)
		alarmDone <- code
	}()
	// Flip the alarm once the levers are pulled and the drill soaks.
	for soaking := false; !soaking; {
		var j drill.Journal
		if b, err := os.ReadFile(jpath); err == nil && json.Unmarshal(b, &j) == nil {
			soaking = len(j.Steps) == 4 && j.Steps[2].Status == drill.StatusRunning
		}
		select {
		case code := <-alarmDone:
			t.Fatalf("the alarm drill exited %d before it soaked:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond): // poll the journal for the soaking state
		}
	}
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "ALARM", Reason: "Threshold Crossed", Updated: since.Add(time.Second)})
	select {
	case code := <-alarmDone:
		if code != 1 || !strings.Contains(stderr.String(), "kosha-api-5xx") {
			t.Fatalf("alarm drill: exit %d, want 1 (stopped by the alarm)\n%s", code, stderr.String())
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("the alarm drill did not stop")
	}
	drillNeeds = union(drillNeeds, append(cliRec.take(), debugNeeds(stderr.String())...))
	if d := sameNeeds(drillNeeds, iam.Commands["drill run"]); d != "" {
		t.Errorf("drill run: %s", d)
	}
	if d := enf.TakeDenials(); len(d) > 0 {
		t.Errorf("drill run as drill-runner: denied %v", d)
	}

	stop()
	if code := <-done; code != 0 {
		t.Fatalf("sandbox exit %d:\n%s", code, sbErr.String())
	}
	if d := sameNeeds(union(dpRec.take(), debugNeeds(sbErr.String())), iam.Commands["sandbox"]); d != "" {
		t.Errorf("sandbox (the data plane): %s", d)
	}
	if d := dpEnf.TakeDenials(); len(d) > 0 {
		t.Errorf("sandbox as data-plane: denied %v", d)
	}
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
// dir pinned to dev, and returns its path.
func copyDrill(t *testing.T, dir, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "drills", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".yaml")
	//nolint:gosec // G703: file is under t.TempDir(), named from a fixed list
	if err := os.WriteFile(file, []byte(strings.Replace(string(src), "\ncontext: local\n", "\ncontext: dev\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
