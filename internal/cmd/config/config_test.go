package config_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

func TestNoConfigFileMeansBuiltinLocal(t *testing.T) {
	e := clitest.New(t)
	if out := e.MustRun(0, "config", "current-context").Stdout; out != "local\n" {
		t.Errorf("current-context = %q", out)
	}
	out := e.MustRun(0, "config", "get-contexts").Stdout
	if !strings.Contains(out, "*") || !strings.Contains(out, "local") || !strings.Contains(out, "embedded") {
		t.Errorf("get-contexts:\n%s", out)
	}
	if _, err := os.Stat(e.ConfigPath()); !os.IsNotExist(err) {
		t.Errorf("reading must not create a config file (stat: %v)", err)
	}
}

func TestSetContextUseAndView(t *testing.T) {
	e := clitest.New(t)
	r := e.MustRun(0, "config", "set-context", "prod", "--table", "kosha-prod", "--region", "eu-west-1", "--profile", "ops", "--protected")
	if !strings.Contains(r.Stdout, `Created context "prod"`) {
		t.Errorf("stdout: %s", r.Stdout)
	}
	e.MustRun(0, "config", "set-context", "prod", "--add-dependency", "billing", "--max-override", "4h")
	e.MustRun(0, "config", "use-context", "prod")
	if out := e.MustRun(0, "config", "current-context").Stdout; out != "prod\n" {
		t.Errorf("current-context = %q", out)
	}
	var v struct {
		CurrentContext string `json:"current-context"`
		Contexts       map[string]struct {
			Store struct {
				DynamoDB *struct{ Table, Region, Profile string } `json:"dynamodb"`
			} `json:"store"`
			Dependencies []string `json:"dependencies"`
			Protected    bool     `json:"protected"`
			MaxOverride  string   `json:"max-override"`
		} `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(e.MustRun(0, "config", "view", "-o", "json").Stdout), &v); err != nil {
		t.Fatal(err)
	}
	p := v.Contexts["prod"]
	if v.CurrentContext != "prod" || p.Store.DynamoDB == nil || p.Store.DynamoDB.Table != "kosha-prod" ||
		p.Store.DynamoDB.Profile != "ops" || !p.Protected || p.MaxOverride != "4h0m0s" {
		t.Errorf("view: %+v", v)
	}
	if strings.Join(p.Dependencies, ",") != "core-api,openai,postgres,screening-sim,billing" {
		t.Errorf("dependencies = %v", p.Dependencies)
	}
	if _, ok := v.Contexts["local"]; !ok {
		t.Error("the built-in local context should still be listed")
	}
	st, err := os.Stat(e.ConfigPath())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("config file mode = %v (%v), want 0600", st.Mode().Perm(), err)
	}
	// Updating one field keeps the others.
	e.MustRun(0, "config", "set-context", "prod", "--region", "eu-central-1")
	out := e.MustRun(0, "config", "view").Stdout
	for _, want := range []string{"region: eu-central-1", "profile: ops", "table: kosha-prod", "protected: true"} {
		if !strings.Contains(out, want) {
			t.Errorf("view after partial update lacks %q:\n%s", want, out)
		}
	}
	e.MustRun(0, "config", "delete-context", "prod")
	if out := e.MustRun(0, "config", "current-context").Stdout; out != "local\n" {
		t.Errorf("after deleting the current context: %q", out)
	}
}

func TestSetContextBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"new"}, "needs a store"},
		{[]string{"bad name!", "--local"}, "context name"},
		{[]string{"x", "--local", "--table", "t"}, "none of the others"},
		{[]string{"x", "--table", "t"}, "needs a region"},
		{[]string{"x", "--table", "t", "--region", "r", "--static-credentials"}, "--endpoint-url"},
		{[]string{"x", "--local", "--max-override", "-1h"}, "out of range"},
		// Under the 5s minimum override: no force-open could succeed on it.
		{[]string{"x", "--local", "--max-override", "2s"}, "--max-override 2s is out of range: give a duration between 1m and 720h"},
		{[]string{"x", "--local", "--max-override", "721h"}, "between 1m and 720h"},
		{[]string{"x", "--local", "--max-override", "0s"}, "between 1m and 720h"},
		{[]string{"x", "--local", "--dependencies", "Open AI"}, "invalid dependency name"},
		{[]string{"x", "--local", "--ratelimit-capacity", "0"}, "at least one token"},
		{[]string{"x", "y"}, "takes one NAME"},
		{[]string{"x", "--table", "t", "--region", "r", "--service-endpoint", "s3=http://x:1"}, "SERVICE one of cloudwatch, dynamodb, secretsmanager, sns, sts"},
		{[]string{"x", "--table", "t", "--region", "r", "--service-endpoint", "sts=localhost:4566"}, "needs http:// or https://"},
		{[]string{"x", "--local", "--service-endpoint", "sts=http://x:1"}, "none of the others"},
		{[]string{"x", "--local", "--chaos-propagation-delay", "2h"}, "out of range"},
	}
	for _, tc := range cases {
		e := clitest.New(t)
		r := e.MustRun(exitcode.Usage, append([]string{"config", "set-context"}, tc.args...)...)
		if !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("set-context %v: stderr %q lacks %q", tc.args, r.Stderr, tc.want)
		}
		if _, err := os.Stat(e.ConfigPath()); !os.IsNotExist(err) {
			t.Errorf("set-context %v: bad input wrote the config file", tc.args)
		}
	}
}

func TestLocalContextAtPath(t *testing.T) {
	e := clitest.New(t)
	path := e.Dir + "/scratch.db"
	e.MustRun(0, "config", "set-context", "scratch", "--local", path, "--use")
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "x")
	if !strings.Contains(r.Stderr, path) {
		t.Errorf("acted-on line should name %s: %s", path, r.Stderr)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("store not created at the given path: %v", err)
	}
	// The local context is untouched.
	e.MustRun(exitcode.NotFound, "--context", "local", "breaker", "get", "openai")
}

func TestMalformedConfigIsAUsageErrorWithTheLine(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("contexts:\n  prod:\n    store:\n      dynamodb:\n        table: t\n        regoin: eu-west-1\n")
	r := e.MustRun(exitcode.Usage, "breaker", "list", "--context", "prod")
	if !strings.Contains(r.Stderr, "line 6") || !strings.Contains(r.Stderr, "regoin") {
		t.Errorf("stderr should name the line and the unknown field: %s", r.Stderr)
	}
}

func TestServiceEndpointsAndPropagationDelay(t *testing.T) {
	e := clitest.New(t)
	e.MustRun(0, "config", "set-context", "ls", "--table", "t", "--region", "us-east-1", "--endpoint-url", "http://127.0.0.1:4566",
		"--service-endpoint", "sts=http://127.0.0.1:4567", "--service-endpoint", "secretsmanager=http://127.0.0.1:4568",
		"--chaos-propagation-delay", "0s")
	out := e.MustRun(0, "config", "view").Stdout
	for _, want := range []string{"endpoint-url: http://127.0.0.1:4566", "sts: http://127.0.0.1:4567", "secretsmanager: http://127.0.0.1:4568", "propagation-delay: 0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("view lacks %q:\n%s", want, out)
		}
	}
	// SERVICE= removes one; the rest stay.
	e.MustRun(0, "config", "set-context", "ls", "--service-endpoint", "sts=")
	out = e.MustRun(0, "config", "view").Stdout
	if strings.Contains(out, "sts: http") || !strings.Contains(out, "secretsmanager: http://127.0.0.1:4568") {
		t.Errorf("after removing sts:\n%s", out)
	}
	// An old file without endpoints or a delay still loads, and a bad
	// service name in the file refuses its context where it is used (view
	// shows it, and says why it is refused).
	e.WriteConfig("contexts:\n  old:\n    store:\n      dynamodb: {table: t, region: r, endpoint-url: http://127.0.0.1:8000}\n")
	e.MustRun(0, "config", "view")
	e.WriteConfig("contexts:\n  bad:\n    store:\n      dynamodb: {table: t, region: r, endpoints: {s3: http://x:1}}\n")
	r := e.MustRun(exitcode.Usage, "--context", "bad", "breaker", "list")
	if !strings.Contains(r.Stderr, `unknown service "s3"`) || !strings.Contains(r.Stderr, "koshactl config delete-context bad") {
		t.Errorf("bad service in the file: %s", r.Stderr)
	}
	if r := e.MustRun(0, "config", "view"); !strings.Contains(r.Stderr, `unknown service "s3"`) {
		t.Errorf("view of a bad service in the file: %s", r.Stderr)
	}
}

// A config file others can write decides where production writes go: every
// command says so once on stderr (stdout stays clean for -o json), and a
// save through koshactl leaves it 0600.
func TestGroupWritableConfigWarnsOnce(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("contexts:\n  local:\n    store:\n      local: {}\n")
	if err := os.Chmod(e.ConfigPath(), 0o664); err != nil { //nolint:gosec // G302: the group-writable file under test
		t.Fatal(err)
	}
	want := "warning: config file " + e.ConfigPath() + " has mode 0664"
	r := e.MustRun(0, "config", "get-contexts", "-o", "json")
	if strings.Count(r.Stderr, want) != 1 || !strings.Contains(r.Stderr, "chmod 600 "+e.ConfigPath()) {
		t.Errorf("stderr does not warn once:\n%s", r.Stderr)
	}
	if !json.Valid([]byte(r.Stdout)) {
		t.Errorf("stdout is not JSON:\n%s", r.Stdout)
	}
	// A command that loads and saves the file warns once too, and the save
	// leaves the file owner-only.
	r = e.MustRun(0, "config", "set-context", "dev", "--table", "kosha-dev", "--region", "eu-west-1")
	if strings.Count(r.Stderr, want) != 1 {
		t.Errorf("set-context stderr:\n%s", r.Stderr)
	}
	if fi, err := os.Stat(e.ConfigPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("after a save: %v %v", fi.Mode(), err)
	}
	if r := e.MustRun(0, "config", "current-context"); strings.Contains(r.Stderr, "warning") {
		t.Errorf("a 0600 file warned:\n%s", r.Stderr)
	}
}

// TestCurrentContextIsTheEffectiveOne: issue 21. With $KOSHACTL_CONTEXT=prod
// every command acted on prod while current-context and get-contexts showed
// local. They show the context commands act on, and where it came from.
func TestCurrentContextIsTheEffectiveOne(t *testing.T) {
	e := clitest.New(t)
	e.MustRun(0, "config", "set-context", "prod", "--table", "kosha-prod", "--region", "eu-west-1", "--protected")
	type cur struct {
		Name, Source string
		FileCurrent  string `json:"file_current_context"`
	}
	check := func(name, source string, args ...string) {
		t.Helper()
		r := e.MustRun(0, append([]string{"config", "current-context"}, args...)...)
		if r.Stdout != name+"\n" {
			t.Errorf("current-context %v: stdout %q, want %q", args, r.Stdout, name)
		}
		if want := map[string]string{"env": "$KOSHACTL_CONTEXT", "flag": "--context", "default": "built-in default"}[source]; !strings.Contains(r.Stderr, want) {
			t.Errorf("current-context %v: stderr %q does not say it came from %s", args, r.Stderr, want)
		}
		var v cur
		if err := json.Unmarshal([]byte(e.MustRun(0, append([]string{"config", "current-context", "-o", "json"}, args...)...).Stdout), &v); err != nil {
			t.Fatal(err)
		}
		if v.Name != name || v.Source != source || v.FileCurrent != "local" {
			t.Errorf("current-context -o json %v = %+v, want %s from %s (file: local)", args, v, name, source)
		}
		var list struct {
			Items []struct {
				Name    string
				Current bool
			}
		}
		if err := json.Unmarshal([]byte(e.MustRun(0, append([]string{"config", "get-contexts", "-o", "json"}, args...)...).Stdout), &list); err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			if it.Current != (it.Name == name) {
				t.Errorf("get-contexts %v marks %s current=%v; the selected context is %s", args, it.Name, it.Current, name)
			}
		}
	}
	check("local", "default")
	t.Setenv("KOSHACTL_CONTEXT", "prod")
	check("prod", "env")
	r := e.MustRun(0, "config", "get-contexts")
	if !strings.Contains(r.Stdout, "*        prod") || !strings.Contains(r.Stderr, `context "prod" is selected by $KOSHACTL_CONTEXT (the config file's current-context is "local")`) {
		t.Errorf("get-contexts under $KOSHACTL_CONTEXT=prod:\nstdout %s\nstderr %s", r.Stdout, r.Stderr)
	}
	t.Setenv("KOSHACTL_CONTEXT", "")
	check("prod", "flag", "--context", "prod")
	t.Setenv("KOSHACTL_CONTEXT", "local")
	check("prod", "flag", "--context", "prod")
}

// A hand-edited max-override out of range in one context refuses that
// context where it is used (exit 2, with the line, the key and the fix),
// not the whole file: the other contexts keep working, and the config
// commands show the invalid one and repair it.
func TestOneInvalidContextDoesNotLockOutTheOthers(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("current-context: dev\ncontexts:\n  dev:\n    store: {local: {path: " + e.Dir + "/dev.db}}\n    max-override: 2s\n" +
		"  prod:\n    store: {local: {path: " + e.Dir + "/prod.db}}\n")
	fix := "fix it with koshactl config set-context dev --max-override 24h"
	for _, args := range [][]string{{"breaker", "list"}, {"config", "current-context"}, {"--context", "dev", "breaker", "list"}, {"config", "use-context", "dev"}} {
		r := e.MustRun(exitcode.Usage, args...)
		if !strings.Contains(r.Stderr, e.ConfigPath()+": line 5: ") || !strings.Contains(r.Stderr, "max-override 2s is out of range") ||
			!strings.Contains(r.Stderr, fix) {
			t.Errorf("%v: stderr %q", args, r.Stderr)
		}
	}
	e.MustRun(0, "--context", "prod", "breaker", "force-open", "openai", "--reason", "incident")
	e.MustRun(0, "--context", "prod", "breaker", "clear", "openai", "--yes")
	t.Setenv("KOSHACTL_CONTEXT", "prod")
	if out := e.MustRun(0, "config", "current-context").Stdout; out != "prod\n" {
		t.Errorf("current-context with KOSHACTL_CONTEXT=prod: %q", out)
	}
	t.Setenv("KOSHACTL_CONTEXT", "")

	r := e.MustRun(0, "config", "get-contexts")
	if !strings.Contains(r.Stdout, "INVALID: embedded "+e.Dir+"/dev.db") || strings.Contains(r.Stdout, "INVALID: embedded "+e.Dir+"/prod.db") ||
		!strings.Contains(r.Stderr, `context "dev" is refused until repaired`) || !strings.Contains(r.Stderr, fix) {
		t.Errorf("get-contexts:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	var list struct {
		Items []struct{ Name, Invalid string } `json:"items"`
	}
	if err := json.Unmarshal([]byte(e.MustRun(0, "config", "get-contexts", "-o", "json").Stdout), &list); err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		if (it.Invalid != "") != (it.Name == "dev") {
			t.Errorf("get-contexts -o json: %s invalid %q", it.Name, it.Invalid)
		}
	}
	if out := e.MustRun(0, "config", "view").Stdout; !strings.Contains(out, "max-override: 2s") {
		t.Errorf("view does not show the invalid context as the file holds it:\n%s", out)
	}
	// A change to another context is saved, and keeps dev as it is.
	e.MustRun(0, "config", "set-context", "prod", "--protected")
	e.MustRun(exitcode.Usage, "breaker", "list")

	e.MustRun(0, "config", "set-context", "dev", "--max-override", "4h")
	e.MustRun(0, "breaker", "list")
	if out := e.MustRun(0, "config", "current-context").Stdout; out != "dev\n" {
		t.Errorf("current-context after the repair: %q", out)
	}
	if r := e.MustRun(0, "config", "get-contexts"); strings.Contains(r.Stdout, "INVALID") || r.Stderr != "" {
		t.Errorf("get-contexts after the repair:\n%s\n%s", r.Stdout, r.Stderr)
	}
}

// An invalid context can be deleted; a syntax error or an unknown key still
// refuses the whole file, which cannot be read.
func TestDeleteAnInvalidContextAndUnreadableFiles(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("current-context: dev\ncontexts:\n  dev:\n    store: {local: {}}\n    max-override: 2s\n")
	e.MustRun(0, "config", "delete-context", "dev")
	if out := e.MustRun(0, "config", "current-context").Stdout; out != "local\n" {
		t.Errorf("current-context after deleting dev: %q", out)
	}
	for _, bad := range []string{
		"contexts:\n  dev:\n    store: {local: {}}\n    max-overide: 4h\n  prod:\n    store: {local: {}}\n",
		"contexts:\n  dev: [\n  prod:\n    store: {local: {}}\n",
	} {
		e.WriteConfig(bad)
		for _, args := range [][]string{{"--context", "prod", "breaker", "list"}, {"config", "get-contexts"}} {
			if r := e.MustRun(exitcode.Usage, args...); !strings.Contains(r.Stderr, e.ConfigPath()) {
				t.Errorf("%q, %v: stderr %q", bad, args, r.Stderr)
			}
		}
	}
}

// current-context names only a context that exists: an unknown one from
// $KOSHACTL_CONTEXT or --context is refused with exit 3, as every other
// command refuses it.
func TestCurrentContextRefusesAnUnknownContext(t *testing.T) {
	e := clitest.New(t)
	t.Setenv("KOSHACTL_CONTEXT", "nope")
	want := e.MustRun(exitcode.NotFound, "breaker", "list").Stderr
	for _, args := range [][]string{{"config", "current-context"}, {"config", "current-context", "-o", "json"}} {
		r := e.MustRun(exitcode.NotFound, args...)
		if r.Stdout != "" || r.Stderr != want || !strings.Contains(r.Stderr, `no such context "nope"`) {
			t.Errorf("%v: stdout %q stderr %q, want stderr %q", args, r.Stdout, r.Stderr, want)
		}
	}
	t.Setenv("KOSHACTL_CONTEXT", "")
	if r := e.MustRun(exitcode.NotFound, "--context", "nope", "config", "current-context"); r.Stdout != "" {
		t.Errorf("--context nope: stdout %q", r.Stdout)
	}
}
