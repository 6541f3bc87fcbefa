package drill_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/report"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	sandboxcmd "github.com/kosha-platform/koshactl/internal/cmd/sandbox"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/gameday"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

type workflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Env      map[string]string `yaml:"env"`
		Strategy struct {
			Matrix struct {
				Include []struct {
					Drill string `yaml:"drill"`
					Test  string `yaml:"test"`
				} `yaml:"include"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Name string            `yaml:"name"`
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// commandLine finds the line of run scripts that invokes koshactl with
// prefix ("sandbox", "drill run") and returns its arguments after the
// prefix, quotes removed, up to a redirection or "&".
func commandLine(t *testing.T, script, prefix string) []string {
	t.Helper()
	for _, line := range strings.Split(script, "\n") {
		_, rest, ok := strings.Cut(line, "./bin/koshactl "+prefix+" ")
		if !ok {
			continue
		}
		var args []string
		for _, f := range strings.Fields(rest) {
			if strings.HasPrefix(f, ">") || f == "&" || strings.HasPrefix(f, "2>") {
				break
			}
			args = append(args, strings.Trim(f, `"'`))
		}
		return args
	}
	return nil
}

// The example CI workflow runs on every pull request, starts the sandbox
// exactly as make test's drill tests configure it, runs every example
// drill make test runs, uploads the JUnit report, the journal and the
// game-day report the drill writes, even when the drill fails, and writes
// the report's Markdown to the step summary.
func TestCIWorkflowRunsDrillsAsMakeTest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ci", "drill.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("docs/ci/drill.yml: %v", err)
	}
	if _, ok := wf.On["pull_request"]; !ok {
		t.Errorf("the workflow does not run on pull_request: on = %v", wf.On)
	}
	job, ok := wf.Jobs["drill"]
	if !ok {
		t.Fatalf("no drill job: %v", wf.Jobs)
	}
	// Every drill in docs/drills, each run as make test runs it: the
	// sandbox drills with drill run, the others by the test that does.
	var all, byRun []string
	harness := map[string]string{}
	for _, m := range job.Strategy.Matrix.Include {
		all = append(all, m.Drill)
		if m.Test == "" {
			byRun = append(byRun, m.Drill)
		} else {
			harness[m.Drill] = m.Test
		}
	}
	files, _ := filepath.Glob(filepath.Join(drillsDir, "*.yaml"))
	var want []string
	for _, f := range files {
		want = append(want, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	slices.Sort(all)
	if len(want) != 5 || !slices.Equal(all, want) {
		t.Errorf("the workflow runs drills %v; docs/drills holds %v", all, want)
	}
	if !slices.Equal(byRun, exampleDrills) {
		t.Errorf("the workflow runs %v with drill run; make test runs %v against the sandbox", byRun, exampleDrills)
	}
	for drillName, test := range harness {
		if src := testSourceOf(t, test); !strings.Contains(src, `"`+drillName+`.yaml"`) {
			t.Errorf("the workflow runs drill %s by %s, which does not run %s.yaml", drillName, test, drillName)
		}
	}
	// GitHub refuses the runner context in a job's env before any job runs.
	for k, v := range job.Env {
		if strings.Contains(v, "runner.") {
			t.Errorf("job env %s = %q: the runner context is not available there", k, v)
		}
	}
	var script, summary string
	var uploads []string
	for _, s := range job.Steps {
		script += s.Run + "\n"
		if strings.Contains(s.Run, "GITHUB_STEP_SUMMARY") {
			summary = s.Run
			if s.If != "always() && matrix.test == ''" {
				t.Errorf("the summary step runs if %q: want always() for every drill run", s.If)
			}
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			if s.If != "always() && matrix.test == ''" {
				t.Errorf("the report upload runs if %q: want always() for every drill run writes a report for (a failed drill's report matters most)", s.If)
			}
			for _, p := range strings.Split(s.With["path"], "\n") {
				if p = strings.TrimSpace(p); p != "" {
					uploads = append(uploads, p)
				}
			}
		}
	}
	f := &cmdenv.Factory{IOStreams: func() *iostreams.IOStreams { ios, _, _, _ := iostreams.Test(); return ios }()}

	// The sandbox: the settings of onSandbox (make test's in-process fleet).
	var sb *sandboxcmd.Options
	cmd := sandboxcmd.NewCmd(f, func(_ context.Context, o *sandboxcmd.Options) error { sb = o; return nil })
	cmd.SetArgs(commandLine(t, script, "sandbox"))
	cmd.SilenceUsage = true
	if err := cmd.Execute(); err != nil || sb == nil {
		t.Fatalf("the workflow's sandbox command does not parse: %v", err)
	}
	if sb.TimeScale != sandboxScale || sb.Profile != sandbox.ProfileInstant || !sb.Chaos || sb.Instances != sandbox.DefaultInstances ||
		sb.RPS != 0 || sb.ConfigFile != "" || sb.KeyFile != "" || sb.AddrFile == "" {
		t.Errorf("the workflow's sandbox differs from make test's: %+v", sb)
	}
	if !strings.Contains(script, `SANDBOX_URL=$(cat "$RUNNER_TEMP/sandbox.url")`) || !strings.Contains(script, sb.AddrFile) {
		t.Errorf("the drill does not get the sandbox's address (%s) as SANDBOX_URL", sb.AddrFile)
	}

	if !strings.Contains(script, `go test -race -count=1 -run "^${{ matrix.test }}\$" ./internal/cmd/drill/`) {
		t.Errorf("the workflow does not run the harnessed drills' tests as make test does:\n%s", script)
	}

	// Each drill: the example file, its JUnit report uploaded.
	for _, name := range exampleDrills {
		expand := func(s string) string { return strings.ReplaceAll(s, "${{ matrix.drill }}", name) }
		var ro *run.Options
		cmd := run.NewCmd(f, func(_ context.Context, o *run.Options) error { ro = o; return nil })
		cmd.SetArgs(commandLine(t, expand(script), "drill run"))
		cmd.SilenceUsage = true
		if err := cmd.Execute(); err != nil || ro == nil {
			t.Fatalf("the workflow's drill command does not parse: %v", err)
		}
		if ro.File != "docs/drills/"+name+".yaml" {
			t.Errorf("the workflow runs %s, want docs/drills/%s.yaml", ro.File, name)
		}
		if _, err := os.Stat(filepath.Join(drillsDir, name+".yaml")); err != nil {
			t.Errorf("drill %s: %v", name, err)
		}
		up := strings.Split(expand(strings.Join(uploads, "\n")), "\n")
		for what, path := range map[string]string{"JUnit report": ro.JUnit, "game-day report": ro.Report, "journal": ro.Journal} {
			if path == "" || !slices.Contains(up, path) {
				t.Errorf("the drill writes its %s to %q, the workflow uploads %q", what, path, up)
			}
		}
		// The step summary is the Markdown report of the run's journal.
		var rep *report.Options
		rcmd := report.NewCmd(f, func(_ context.Context, o *report.Options) error { rep = o; return nil })
		rcmd.SetArgs(commandLine(t, expand(summary), "drill report"))
		rcmd.SilenceUsage = true
		if err := rcmd.Execute(); err != nil || rep == nil || rep.Journal != ro.Journal || rep.Output != gameday.FormatMarkdown || rep.Out != "" ||
			!strings.Contains(summary, `>>"$GITHUB_STEP_SUMMARY"`) {
			t.Errorf("the summary step (%q) is not the Markdown report of the journal %s: %+v, %v", summary, ro.Journal, rep, err)
		}
	}
}

// The "Run drills in CI" snippet of docs/drills/README.md runs what the
// workflow runs: the sandbox drills with drill run against a sandbox
// started as the workflow starts it, and the harnessed drills by their
// tests.
func TestReadmeCISnippetRunsWhatTheWorkflowRuns(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ci", "drill.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	var byRun, tests []string
	script := ""
	for _, m := range wf.Jobs["drill"].Strategy.Matrix.Include {
		if m.Test == "" {
			byRun = append(byRun, m.Drill)
		} else {
			tests = append(tests, m.Test)
		}
	}
	for _, s := range wf.Jobs["drill"].Steps {
		script += s.Run + "\n"
	}
	readme, err := os.ReadFile(filepath.Join(drillsDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Run drills in CI\n")
	_, snippet, ok2 := strings.Cut(section, "```yaml\n")
	snippet, _, ok3 := strings.Cut(snippet, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/drills/README.md has no yaml snippet under \"## Run drills in CI\"")
	}
	var steps []struct {
		Run string `yaml:"run"`
	}
	if err := yaml.Unmarshal([]byte(snippet), &steps); err != nil {
		t.Fatalf("the README's CI snippet is not YAML: %v", err)
	}
	snip := ""
	for _, s := range steps {
		snip += s.Run + "\n"
	}
	// The drill loop names exactly the drills the workflow runs with drill run.
	var loop []string
	for _, line := range strings.Split(snip, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "for d in "); ok {
			rest, _, _ = strings.Cut(rest, ";")
			loop = strings.Fields(rest)
		}
	}
	if !slices.Equal(loop, byRun) || !slices.Equal(loop, exampleDrills) {
		t.Errorf("the README's snippet runs %v with drill run; the workflow %v, make test %v", loop, byRun, exampleDrills)
	}
	// The harnessed drills run by the workflow's tests, as go test runs them there.
	pattern := "'^(" + strings.Join(tests, "|") + ")$'"
	if len(tests) != 2 || !strings.Contains(snip, "go test -race -count=1 -run "+pattern+" ./internal/cmd/drill/") {
		t.Errorf("the README's snippet does not run the harnessed drills' tests %s:\n%s", pattern, snip)
	}
	// Its sandbox is the workflow's.
	f := &cmdenv.Factory{IOStreams: func() *iostreams.IOStreams { ios, _, _, _ := iostreams.Test(); return ios }()}
	parse := func(args []string) *sandboxcmd.Options {
		var sb *sandboxcmd.Options
		cmd := sandboxcmd.NewCmd(f, func(_ context.Context, o *sandboxcmd.Options) error { sb = o; return nil })
		cmd.SetArgs(args)
		cmd.SilenceUsage = true
		if err := cmd.Execute(); err != nil || sb == nil {
			t.Fatalf("sandbox %v does not parse: %v", args, err)
		}
		sb.AddrFile = ""
		return sb
	}
	inWorkflow := parse(commandLine(t, script, "sandbox"))
	inReadme := parse(commandLine(t, strings.ReplaceAll("\n"+snip, "\nkoshactl ", "\n./bin/koshactl "), "sandbox"))
	if inReadme.TimeScale != inWorkflow.TimeScale || inReadme.Profile != inWorkflow.Profile || inReadme.Chaos != inWorkflow.Chaos {
		t.Errorf("the README's sandbox %+v differs from the workflow's %+v", inReadme, inWorkflow)
	}
}

// testSourceOf returns the source of this package's test function name
// (from its line to the next top-level func), failing when there is none.
func testSourceOf(t *testing.T, name string) string {
	t.Helper()
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, body, ok := strings.Cut(string(b), "\nfunc "+name+"(t *testing.T) {\n")
		if !ok {
			continue
		}
		body, _, _ = strings.Cut(body, "\nfunc ")
		return body
	}
	t.Errorf("no test %s in internal/cmd/drill", name)
	return ""
}
