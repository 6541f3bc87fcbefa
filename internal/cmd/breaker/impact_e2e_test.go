package breaker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/sandboxtest"
)

// impactDoc is the part of a lever's JSON the impact tests read.
type impactDoc struct {
	DryRun bool `json:"dry_run"`
	Impact *struct {
		Tools []struct {
			Tool           string   `json:"tool"`
			Behaviour      string   `json:"behaviour"`
			CallsPerMinute *float64 `json:"calls_per_minute"`
			Estimate       *struct {
				Calls int64  `json:"calls"`
				Text  string `json:"text"`
			} `json:"estimate"`
		} `json:"tools"`
		Rates *struct {
			Source string `json:"source"`
			Error  string `json:"error"`
		} `json:"rates"`
	} `json:"impact"`
}

// The check, through the binary: on a sandbox with traffic, a dry
// run of forcing screening-sim with --metrics-url names screen_entity, its
// deferred behaviour and a live call rate above zero, and forces nothing;
// the real force and its clear each record the rate seen, and audit impact
// says how many screenings the override deferred.
func TestForceOpenImpactOnTheSandboxWithTraffic(t *testing.T) {
	bin := koshabin.Path(t)
	clitest.New(t)
	sb := sandboxtest.Start(t, os.Getenv("KOSHACTL_STATE_DIR"), 20, false, func(c *sandbox.Config) { c.Traffic.RPS = 40 })
	url := sb.URL() + sandbox.PathMetrics
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...) //nolint:gosec // G204: the test's own binary
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("koshactl %v: exit %d\n%s%s", args, ee.ExitCode(), out.String(), errOut.String())
			}
			t.Fatal(err)
		}
		return out.String()
	}

	doc := clitest.Decode[impactDoc](t, run("breaker", "force-open", "screening-sim", "--reason", "impact check", "--for", "30m",
		"--dry-run", "-o", "json", "--metrics-url", url))
	if !doc.DryRun || doc.Impact == nil || len(doc.Impact.Tools) != 1 {
		t.Fatalf("dry run %+v, want one tool's impact", doc)
	}
	tool := doc.Impact.Tools[0]
	if tool.Tool != "screen_entity" || tool.Behaviour != "deferred" || tool.CallsPerMinute == nil || *tool.CallsPerMinute <= 0 {
		t.Errorf("tool %+v (rate %v), want screen_entity deferred at a rate above zero", tool, tool.CallsPerMinute)
	}
	if tool.Estimate == nil || tool.Estimate.Calls <= 0 || !bytes.HasSuffix([]byte(tool.Estimate.Text), []byte("screenings deferred over 30m")) {
		t.Errorf("estimate %+v, want the screenings deferred over 30m", tool.Estimate)
	}
	if r := doc.Impact.Rates; r == nil || r.Error != "" || r.Source != "prometheus "+url {
		t.Errorf("rates %+v, want read from %s", r, url)
	}
	ov := breaker.NewOverrides(sb.Store, clock.Real{})
	if _, err := ov.Get(context.Background(), "screening-sim"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the dry run: %v, want no override", err)
	}

	// The table says the same to a person.
	table := run("breaker", "force-open", "screening-sim", "--reason", "impact check", "--dry-run", "--metrics-url", url)
	for _, want := range []string{"impact of forcing screening-sim for 1h", "screen_entity", "deferred", "screenings deferred over 1h"} {
		if !bytes.Contains([]byte(table), []byte(want)) {
			t.Errorf("dry run's table lacks %q:\n%s", want, table)
		}
	}

	run("breaker", "force-open", "screening-sim", "--reason", "impact check", "--for", "30m", "--metrics-url", url)
	run("breaker", "clear", "screening-sim", "--reason", "done", "--metrics-url", url)
	type rec struct {
		Action string `json:"action"`
		Impact *struct {
			Dependency string `json:"dependency"`
			Tools      []struct {
				Tool           string   `json:"tool"`
				Behaviour      string   `json:"behaviour"`
				CallsPerMinute *float64 `json:"calls_per_minute"`
			} `json:"tools"`
			RatesSource string `json:"rates_source"`
		} `json:"impact"`
	}
	recs := clitest.Decode[struct {
		Items []rec `json:"items"`
	}](t, run("audit", "list", "--subject", "breaker#screening-sim", "-o", "json")).Items
	if len(recs) != 2 {
		t.Fatalf("records %+v, want the force and the clear", recs)
	}
	for _, r := range recs {
		if r.Impact == nil || r.Impact.Dependency != "screening-sim" || len(r.Impact.Tools) != 1 || r.Impact.Tools[0].Tool != "screen_entity" ||
			r.Impact.Tools[0].CallsPerMinute == nil || *r.Impact.Tools[0].CallsPerMinute <= 0 || r.Impact.RatesSource != "prometheus "+url {
			t.Errorf("%s record's impact %+v, want screen_entity's rate read from %s", r.Action, r.Impact, url)
		}
	}

	spans := clitest.Decode[struct {
		Spans []struct {
			Dependency string `json:"dependency"`
			Tool       string `json:"tool"`
			Behaviour  string `json:"behaviour"`
			Ended      string `json:"ended"`
			Calls      *int64 `json:"calls"`
		} `json:"spans"`
	}](t, run("audit", "impact", "--since", "1h", "-o", "json")).Spans
	if len(spans) != 1 {
		t.Fatalf("spans %+v, want screen_entity's", spans)
	}
	if s := spans[0]; s.Dependency != "screening-sim" || s.Tool != "screen_entity" || s.Behaviour != "deferred" || s.Ended != "cleared" ||
		s.Calls == nil || *s.Calls <= 0 {
		t.Errorf("span %+v, want screen_entity deferred until cleared, with the screenings it touched", s)
	}
	if out := run("audit", "impact", "--since", "1h"); !bytes.Contains([]byte(out), []byte("screen_entity")) || !bytes.Contains([]byte(out), []byte("cleared")) {
		t.Errorf("audit impact's table:\n%s", out)
	}
}
