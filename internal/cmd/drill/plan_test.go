package drill_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

func storeHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path) //nolint:gosec // G304: the test's own state dir
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// drill plan on every example prints the levers each mutating step moves,
// with its inverse and expiry, and writes nothing: the store file is
// byte-for-byte the same and the audit log is empty.
func TestPlanEveryExampleWritesNothing(t *testing.T) {
	e := clitest.New(t)
	db := filepath.Join(os.Getenv("KOSHACTL_STATE_DIR"), "local.db")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before := storeHash(t, db)
	t.Setenv("SANDBOX_URL", "http://127.0.0.1:9") // never contacted
	cw := withCloudWatchFake(t)
	files, err := filepath.Glob(filepath.Join(drillsDir, "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := e.MustRun(exitcode.OK, "drill", "plan", file)
			if !strings.Contains(r.Stdout, `would act on context "local" (sqlite `) || !strings.Contains(r.Stdout, "nothing was run or written") {
				t.Errorf("plan:\n%s", r.Stdout)
			}
			var p runner.Plan
			if err := json.Unmarshal([]byte(e.MustRun(exitcode.OK, "drill", "plan", file, "-o", "json").Stdout), &p); err != nil {
				t.Fatal(err)
			}
			levers := 0
			for _, s := range p.Steps {
				if s.Lever == nil {
					continue
				}
				levers++
				if s.Lever.Subject == "" || s.Lever.Inverse == "" || s.Lever.Expiry == "" ||
					!strings.Contains(r.Stdout, "moves "+s.Lever.Subject) {
					t.Errorf("step %s lever %+v", s.ID, s.Lever)
				}
				if s.Kind == "breaker.force-open" && (s.Lever.ExpiresWithinSeconds <= 0 || s.Lever.ExpiresWithinSeconds > p.TimeoutSeconds) {
					t.Errorf("force-open expiry bound %v, want within the drill's timeout %v", s.Lever.ExpiresWithinSeconds, p.TimeoutSeconds)
				}
			}
			if p.Kind != "DrillPlan" || p.Context != "local" || levers == 0 || len(p.Steps) == 0 {
				t.Errorf("plan %+v", p)
			}
		})
	}
	if n := len(cw.AlarmRequests()); n != 0 {
		t.Errorf("drill plan sent %d DescribeAlarms requests", n)
	}
	if after := storeHash(t, db); after != before {
		t.Error("drill plan changed the store file")
	}
	st, err = sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := audit.NewLog(st, nil, "local").List(context.Background(), audit.Query{})
	if err != nil || len(recs.Records) != 0 || len(recs.Unreadable) != 0 {
		t.Errorf("audit records after plan: %+v %v", recs, err)
	}
}

// The alarm example's plan names the one DescribeAlarms request each poll
// sends.
func TestPlanShowsTheAlarmRequest(t *testing.T) {
	e := clitest.New(t)
	withCloudWatchFake(t)
	r := e.MustRun(exitcode.OK, "drill", "plan", filepath.Join(drillsDir, "alarm-stop.yaml"), "--var", "prefix=team-a-")
	for _, want := range []string{`alarms: one DescribeAlarms request per poll in eu-west-1, AlarmNamePrefix "team-a-"`,
		"a service alarm fired [alarm]: alarm team-a-* in ALARM", "moves rl#agent-1"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// Each force-open step's plan says what it does to the tools while its
// override holds, from the degradation matrix: screening-sim defers
// screenings; postgres has no breaker, so nothing obeys its override.
func TestPlanShowsTheImpactOfEachForce(t *testing.T) {
	e := clitest.New(t, clitest.Parallel())
	file := writeFile(t, "impact.yaml", `
name: impact
timeout: 30m
steps:
  - id: screening
    breaker.force-open:
      dependency: screening-sim
      for: 20m
      reason: screening outage drill
  - id: db
    breaker.force-open:
      dependency: postgres
      reason: no breaker
  - id: pause
    sleep: 1s
`)
	r := e.MustRun(exitcode.OK, "drill", "plan", file)
	for _, want := range []string{
		"impact while it holds (degradation matrix):\n" +
			`         screen_entity deferred: no synchronous result; the request is recorded for later · client sees status: "deferred" with retry_after_s`,
		"         postgres: no breaker in the data plane (LLD §1): no instance obeys this override, so no tool changes " +
			"[when postgres itself is down: search_knowledge_base failed, raise_dispute failed, flag_transaction_for_review failed]",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.Stdout)
		}
	}
	var p runner.Plan
	if err := json.Unmarshal([]byte(e.MustRun(exitcode.OK, "drill", "plan", file, "-o", "json").Stdout), &p); err != nil {
		t.Fatal(err)
	}
	screening, db, pause := p.Steps[0].Impact, p.Steps[1].Impact, p.Steps[2].Impact
	if screening == nil || len(screening.Tools) != 1 || screening.Tools[0].Tool != "screen_entity" || screening.Tools[0].Behaviour != "deferred" ||
		screening.ForSeconds != 1200 || screening.Rates != nil {
		t.Errorf("screening-sim's impact %+v: want screen_entity deferred over the step's 20m, no rates (a plan reads nothing)", screening)
	}
	if db == nil || len(db.Tools) != 0 || len(db.Dependencies) != 1 || db.Dependencies[0].Obeyed {
		t.Errorf("postgres's impact %+v: want no tool, not obeyed", db)
	}
	if pause != nil {
		t.Errorf("a sleep has an impact %+v", pause)
	}
}
