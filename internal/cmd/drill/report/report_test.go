package report_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/report"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gameday"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
)

// The gameday package's fixtures, as journal files.
var testdata = filepath.Join("..", "..", "..", "gameday", "testdata")

func factory(t *testing.T, env func(context.Context) (*cmdenv.Env, error), now time.Time) (*cmdenv.Factory, *syncbuf.Buffer, *syncbuf.Buffer) {
	t.Helper()
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	if env == nil {
		env = func(context.Context) (*cmdenv.Env, error) { t.Fatal("the report needed no context"); return nil, nil }
	}
	clk := clocktest.NewFake(now)
	resolve := env
	env = func(ctx context.Context) (*cmdenv.Env, error) {
		e, err := resolve(ctx)
		if e != nil {
			e.Clock = clk // the services' clock is the factory's, as factory.Resolve sets it
		}
		return e, err
	}
	return &cmdenv.Factory{IOStreams: ios, Clock: clk, Env: env}, out, errOut
}

func TestMarkdownOnStdoutIsTheGoldenSummary(t *testing.T) {
	f, out, _ := factory(t, nil, time.Now())
	if err := report.Run(context.Background(), f, &report.Options{Journal: filepath.Join(testdata, "stopped.journal.json"), Output: gameday.FormatMarkdown}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(testdata, "stopped.md"))
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("stdout:\n%s\nwant the golden summary:\n%s", out, want)
	}
}

func TestHTMLToAFile(t *testing.T) {
	f, out, errOut := factory(t, nil, time.Now())
	path := filepath.Join(t.TempDir(), "report.html")
	if err := report.Run(context.Background(), f, &report.Options{Journal: filepath.Join(testdata, "killed.journal.json"), Output: gameday.FormatHTML, Out: path, NoFetch: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.Contains(string(b), "drill recover by oncall@example.com") || out.String() != "" {
		t.Errorf("file %.80q, stdout %q", b, out)
	}
	if !strings.Contains(errOut.String(), "wrote "+path) {
		t.Errorf("stderr = %q", errOut)
	}
}

func TestRefusesWhatIsNotAJournal(t *testing.T) {
	dir := t.TempDir()
	newer := readFixture(t, "stopped")
	newer.Version = drill.JournalVersion + 1
	b, _ := json.Marshal(newer)
	for name, tc := range map[string]struct{ content, want string }{
		"not json":   {"<html>", "is not a drill journal"},
		"other kind": {`{"kind":"Other"}`, `is not a drill journal (kind "Other")`},
		"newer":      {string(b), "journal version 3 is newer than this koshactl reads (2): use a newer koshactl; nothing was written"},
	} {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(dir, name+".json")
			if err := os.WriteFile(in, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			f, out, _ := factory(t, nil, time.Now())
			outFile := filepath.Join(dir, name+".html")
			err := report.Run(context.Background(), f, &report.Options{Journal: in, Output: gameday.FormatHTML, Out: outFile})
			if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("exit %d: %v; want %q", exitcode.Of(err), err, tc.want)
			}
			if _, serr := os.Stat(outFile); !os.IsNotExist(serr) || out.String() != "" {
				t.Errorf("something was written: %v, %q", serr, out)
			}
		})
	}
}

func TestOutputFormatFlag(t *testing.T) {
	f, _, _ := factory(t, nil, time.Now())
	var got *report.Options
	cmd := report.NewCmd(f, func(_ context.Context, o *report.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"j.json", "-o", "markdown", "--out", "x.md"})
	if err := cmd.Execute(); err != nil || got.Output != "markdown" || got.Out != "x.md" || got.Journal != "j.json" {
		t.Fatalf("%v %+v", err, got)
	}
	cmd = report.NewCmd(f, func(context.Context, *report.Options) error { t.Fatal("ran"); return nil })
	cmd.SetArgs([]string{"j.json", "-o", "pdf"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "use html or markdown") {
		t.Errorf("-o pdf: %v", err)
	}
}

func readFixture(t *testing.T, name string) *drill.Journal {
	t.Helper()
	j, err := drill.StreamJournal(filepath.Join(testdata, name+".journal.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A journal without gauge samples (an older koshactl's) gets the run's
// window from the context's metrics source: CloudWatch keeps history.
func TestFetchesTheWindowWhenTheJournalHasNoSamples(t *testing.T) {
	j := readFixture(t, "stopped")
	j.Version, j.GaugeSamples = 1, nil
	path := filepath.Join(t.TempDir(), "v1.json")
	if err := runner.WriteJournal(path, j); err != nil {
		t.Fatal(err)
	}
	cw := cwfake.New(t)
	cw.Put("openai", "gw-1", j.StartedAt, 3)
	cw.Put("openai", "gw-2", j.StartedAt, 2)
	cw.Put("openai", "gw-1", j.StartedAt.Add(3*time.Minute), 0) // after the run: not shown
	var asked string
	env := func(context.Context) (*cmdenv.Env, error) {
		return &cmdenv.Env{Name: "prod",
			Context: &config.Context{Dependencies: []string{"openai"}, Metrics: config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{EndpointURL: cw.URL}}},
			AWSConfig: func(context.Context) (aws.Config, error) {
				return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1, HTTPClient: cw.HTTPClient(),
					Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake", "")}, nil
			}}, nil
	}
	f, out, errOut := factory(t, func(ctx context.Context) (*cmdenv.Env, error) { return env(ctx) }, j.StartedAt.Add(5*time.Minute))
	if err := report.Run(context.Background(), f, &report.Options{Journal: path, Output: gameday.FormatHTML}); err != nil {
		t.Fatal(err)
	}
	asked = f.ContextName
	page := out.String()
	if asked != "local" || cw.Calls() == 0 || errOut.String() != "" {
		t.Errorf("context %q, %d calls, stderr %q", asked, cw.Calls(), errOut)
	}
	for _, want := range []string{"breaker_state fetched from cloudwatch Kosha/Resilience (eu-west-1)", "openai gw-1: forced_open from 09:30:00.000Z",
		"openai gw-2: open from 09:30:00.000Z"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "09:33:00") {
		t.Error("a point after the run is shown")
	}

	// --no-fetch: the journal alone; a failing source: a warning and a note.
	f, out, _ = factory(t, nil, j.StartedAt.Add(5*time.Minute))
	if err := report.Run(context.Background(), f, &report.Options{Journal: path, Output: gameday.FormatHTML, NoFetch: true}); err != nil ||
		!strings.Contains(out.String(), "no breaker_state samples: the run polled no gauges, and none were fetched") {
		t.Errorf("--no-fetch: %v", err)
	}
	f, _, errOut = factory(t, func(context.Context) (*cmdenv.Env, error) {
		return nil, cmdutil.Usagef(`context "local" not found`)
	}, j.StartedAt.Add(5*time.Minute))
	if err := report.Run(context.Background(), f, &report.Options{Journal: path, Output: gameday.FormatMarkdown}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), `warning: context "local": context "local" not found; the report shows no breaker_state`) {
		t.Errorf("stderr = %q", errOut)
	}
}
