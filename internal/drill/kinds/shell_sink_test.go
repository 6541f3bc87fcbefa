package kinds

import (
	"context"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// Any reference in a shell command is a problem, whatever it names; the
// values reach the command only through its environment, where the shell
// never parses them.
func TestShellCommandsTakeNoReferences(t *testing.T) {
	for _, tc := range []struct{ run, want string }{
		{`echo ${vars.v}`, `use "$DRILL_VAR_V" from its environment`},
		{`echo "${steps.probe.body}"`, `use "$DRILL_STEP_PROBE_BODY" from its environment`},
		{`echo ${steps.probe.json.a.b}`, `pass it in the environment, env: {PROBE_JSON_A_B: "${steps.probe.json.a.b}"}, and use "$PROBE_JSON_A_B"`},
		{`echo ${steps.probe.json.items[0].id}`, `env: {PROBE_JSON_ITEMS_0_ID: "${steps.probe.json.items[0].id}"}, and use "$PROBE_JSON_ITEMS_0_ID"`},
		{`echo ${steps.9lives.header.x-id}`, `env: {STEP_9LIVES_HEADER_X_ID: "${steps.9lives.header.x-id}"}, and use "$STEP_9LIVES_HEADER_X_ID"`},
		{`echo ${env.HOME}`, `use "$HOME" (the command inherits koshactl's environment)`},
		{`echo ${env.X:-y}`, `use "$${X:-y}" (the command inherits koshactl's environment)`},
		{`echo ${drill.run_id}`, `use "$DRILL_RUN_ID" from its environment`},
	} {
		src := "name: s\ntimeout: 1m\nvars: {v: x}\nsteps:\n  - id: probe\n    http: {url: \"http://h/\"}\n  - id: 9lives\n    http: {url: \"http://h/\"}\n  - shell: '" + tc.run + "'\n"
		_, probs := drill.Parse(Builtin(), "s.yaml", []byte(src))
		if len(probs) != 1 || !strings.Contains(probs[0].Message, "a shell command takes no ${...} references (the value would become shell code)") ||
			!strings.HasSuffix(probs[0].Message, tc.want) {
			t.Errorf("%s: problems %v, want one ending %s", tc.run, probs, tc.want)
		}
	}
	// What the message suggests is a valid drill.
	shellParse(t, "name: s\ntimeout: 1m\nsteps:\n  - id: 9lives\n    http: {url: \"http://h/\"}\n"+
		"  - shell: {run: 'echo \"$STEP_9LIVES_HEADER_X_ID\"', env: {STEP_9LIVES_HEADER_X_ID: \"${steps.9lives.header.x-id}\"}}\n")
	// A command built in code with a reference is refused when it runs (a
	// template with one, as the file's vars hold it).
	tm := shellParse(t, "name: s\ntimeout: 1m\nvars: {v: x, cmd: 'echo ${vars.v}'}\nsteps: [{sleep: 1s}]\n").Vars[1].Value
	if _, err := (&shellSpec{run: tm, shell: DefaultShell}).exec(context.Background(), shellRun(t, "$(touch pwned)")); err == nil ||
		!strings.Contains(err.Error(), "a shell command takes no ${...} references") {
		t.Errorf("exec of a command with a reference: %v", err)
	}
	// $${ is still a literal ${ for the shell's own expansion.
	d := shellParse(t, "name: s\ntimeout: 1m\nsteps:\n  - shell: 'echo \"$${DRILL_NAME}\"'\n")
	if got := d.Steps[0].Spec.(*shellStep).spec.run.String(); got != `echo "$${DRILL_NAME}"` {
		t.Errorf("run = %q", got)
	}
}

// Every hostile value reaches a shell command through its environment as
// the same bytes, and runs nothing.
func TestShellReceivesHostileValuesAsData(t *testing.T) {
	svc := &runtime.Deps{Environ: []string{"PATH=/usr/bin:/bin"}}
	dir := t.TempDir()
	for _, v := range drilltest.HostileValues {
		d := shellParse(t, "name: s\ntimeout: 1m\nvars: {v: x}\nsteps:\n  - shell:\n      run: printf '%s|' \"$DRILL_VAR_V\" \"$V\"\n      env: {V: \"${vars.v}\"}\n      dir: "+dir+"\n")
		rc := runtime.NewRunContext(d, "run1", svc, nil)
		rc.SetVar("v", v, false)
		r, err := d.Steps[0].Spec.(*shellStep).spec.exec(context.Background(), rc)
		if strings.IndexByte(v, 0) >= 0 {
			if err == nil || !strings.Contains(err.Error(), "env V: the value holds a NUL byte") {
				t.Errorf("%q: err = %v", v, err)
			}
			continue
		}
		if err != nil || r.exitCode != 0 {
			t.Fatalf("%q: %v %+v", v, err, r)
		}
		if want := strings.TrimRight(v+"|"+v+"|", "\n"); r.stdout != want {
			t.Errorf("%q: stdout %q, want %q", v, r.stdout, want)
		}
	}
	noFilesIn(t, dir)
}

// A variable or output holding NUL is left out of the environment, with a
// notice, instead of failing every later shell step.
func TestShellEnvironmentLeavesOutANULValue(t *testing.T) {
	d := shellParse(t, "name: s\ntimeout: 1m\nvars: {v: x, w: y}\nsteps:\n  - shell: 'printf \"%s|%s\" \"$${DRILL_VAR_V-unset}\" \"$DRILL_VAR_W\"'\n")
	var notes []string
	rc := runtime.NewRunContext(d, "run1", &runtime.Deps{}, func(s string) { notes = append(notes, s) })
	rc.SetVar("v", "a\x00b", false)
	rc.SetVar("w", "fine", false)
	r, err := d.Steps[0].Spec.(*shellStep).spec.exec(context.Background(), rc)
	if err != nil || r.stdout != "unset|fine" {
		t.Fatalf("%v %+v", err, r)
	}
	if len(notes) != 1 || notes[0] != "DRILL_VAR_V is not set for the command: its value holds a NUL byte, which an environment variable cannot carry" {
		t.Errorf("notices = %q", notes)
	}
}

func noFilesIn(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ents {
		t.Errorf("a value ran as shell code: %s was created", n.Name())
	}
}

// shellParse parses src with the built-in kinds.
func shellParse(t testing.TB, src string) *drill.Drill {
	t.Helper()
	d, probs := drill.Parse(Builtin(), "s.yaml", []byte(src))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	return d
}

// shellRun returns a run context whose variable v holds value.
func shellRun(t testing.TB, value string) *runtime.RunContext {
	t.Helper()
	rc := runtime.NewRunContext(shellParse(t, "name: s\ntimeout: 1m\nvars: {v: x}\nsteps: [{sleep: 1s}]\n"), "run1", &runtime.Deps{}, nil)
	rc.SetVar("v", value, false)
	return rc
}

// A long command is described cut at a character with "…", never in the
// middle of one (a split é printed as \xc3 in the plan and the journal).
func TestShellStepDescriptionCutsAtACharacter(t *testing.T) {
	e := drilltest.NewEnv(t)
	run := "echo " + strings.Repeat("x", 114) + "é and more"
	d := drilltest.Parse(t, Builtin(), "name: x\ntimeout: 1m\nsteps:\n  - shell: \""+run+"\"\n")
	got := d.Steps[0].Spec.(*shellStep).Describe(e.RunContext(d))
	want := "run: echo " + strings.Repeat("x", 114) + "…"
	if got != want || !utf8.ValidString(got) {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
