package breaker_test

import (
	"net"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// closedURL is a metrics URL nothing serves: a port that was listened on
// and closed.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/metrics"
}

// A metrics source that cannot be read leaves the matrix's impact and says
// so; the force goes ahead, and its record says why it holds no rate.
func TestImpactWhenTheMetricsSourceCannotBeRead(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	url := closedURL(t)
	doc := clitest.Decode[impactDoc](t, e.MustRun(0, "breaker", "force-open", "screening-sim", "--reason", "r", "--dry-run", "-o", "json",
		"--metrics-url", url).Stdout)
	if doc.Impact == nil || len(doc.Impact.Tools) != 1 || doc.Impact.Tools[0].Tool != "screen_entity" || doc.Impact.Tools[0].CallsPerMinute != nil {
		t.Fatalf("impact %+v, want screen_entity without a rate", doc.Impact)
	}
	if r := doc.Impact.Rates; r == nil || r.Error == "" || r.Source != "prometheus "+url {
		t.Errorf("rates %+v, want why %s could not be read", r, url)
	}
	table := e.MustRun(0, "breaker", "force-open", "screening-sim", "--reason", "r", "--dry-run", "--metrics-url", url).Stdout
	if !strings.Contains(table, "call rates: not read from prometheus "+url) || !strings.Contains(table, "the impact above is the matrix's alone") {
		t.Errorf("the table does not say the rates were not read:\n%s", table)
	}

	e.MustRun(0, "breaker", "force-open", "screening-sim", "--reason", "r", "--metrics-url", url)
	recs := clitest.Decode[struct {
		Items []struct {
			Impact *struct {
				Tools []struct {
					Tool      string `json:"tool"`
					Behaviour string `json:"behaviour"`
				} `json:"tools"`
				RatesError string `json:"rates_error"`
			} `json:"impact"`
		} `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "--action", "breaker.force-open", "-o", "json").Stdout).Items
	if len(recs) != 1 || recs[0].Impact == nil || recs[0].Impact.RatesError == "" || len(recs[0].Impact.Tools) != 1 ||
		recs[0].Impact.Tools[0].Behaviour != "deferred" {
		t.Errorf("the force's record %+v, want screen_entity deferred and why no rate was read", recs)
	}
}

// A --metrics-url that cannot be scraped is refused before anything is
// read or written.
func TestImpactMetricsURLRefused(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(exitcode.Usage, "breaker", "force-open", "openai", "--reason", "r", "--metrics-url", "ftp://example.invalid/metrics")
	if !strings.Contains(r.Stderr, "--metrics-url") {
		t.Errorf("refusal: %s", r.Stderr)
	}
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")
}
