package tui

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/charmbracelet/x/vt"

	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// program is a real Bubble Tea program running the harness's model, and a
// terminal emulator replaying its output: the renderer only redraws the
// cells that change, so text is looked for on the emulated screen, not in
// the byte stream.
type program struct {
	*teatest.TestModel
	emu *vt.Emulator
}

// startProgram runs at 80x24. Timers stay off unless the harness turned them
// on: refreshes happen on Init and on r.
func startProgram(t *testing.T, h *harness) *program {
	t.Helper()
	tm := teatest.NewTestModel(t, h.m, teatest.WithInitialTermSize(80, 24),
		teatest.WithProgramOptions(tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	emu := vt.NewEmulator(80, 24)
	// The program's output is not a terminal, so it is not put in raw mode
	// and its renderer counts on the tty turning LF into CR LF: emulate that
	// with line feed/new line mode.
	_, _ = emu.WriteString(ansi.SetModeLineFeedNewLine)
	go func() { _, _ = io.Copy(io.Discard, emu) }() // terminal replies nobody reads
	t.Cleanup(func() {
		_ = tm.Quit()
		// Ends the drain above (Close itself races with Read in vt).
		_ = emu.InputPipe().(io.Closer).Close()
	})
	return &program{TestModel: tm, emu: emu}
}

// resize changes the program's and the emulator's size.
func (p *program) resize(w, h int) {
	p.emu.Resize(w, h)
	p.Send(tea.WindowSizeMsg{Width: w, Height: h})
}

// waitFor polls the program's output until the screen shows every text.
func waitFor(t *testing.T, p *program, texts ...string) {
	t.Helper()
	var screen string
	if err := wait.For(t.Context(), fmt.Sprintf("the screen to show %q", texts), func() bool {
		out, err := io.ReadAll(p.Output())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = p.emu.Write(out)
		screen = p.emu.String()
		found := true
		for _, text := range texts {
			found = found && strings.Contains(screen, text)
		}
		return found
	}); err != nil {
		t.Fatalf("%v; the last screen:\n%s", err, screen)
	}
}

func finalModel(t *testing.T, tm *program) Model {
	t.Helper()
	return tm.FinalModel(t, teatest.WithFinalTimeout(wait.Ceiling)).(Model)
}

func TestProgramForceOpenThenClear(t *testing.T) {
	h := newHarness(t, Options{})
	tm := startProgram(t, h)
	waitFor(t, tm, "screening-sim", "27m alice")

	tm.Send(keyMsg("f"))
	waitFor(t, tm, "Force core-api open across the fleet")
	tm.Type("failover drill")
	tm.Send(keyMsg("enter"))
	waitFor(t, tm, "Duration:")
	tm.Send(keyMsg("enter"))
	waitFor(t, tm, "core-api forced open for 1h")
	if o, ok := h.ov.get("core-api"); !ok || o.Reason != "failover drill" || o.ExpiresAt != epoch.Add(time.Hour) {
		t.Fatalf("store after force-open: %+v %v", o, ok)
	}

	tm.Send(keyMsg("c"))
	waitFor(t, tm, "Clear the active override of core-api")
	tm.Type("drill over")
	tm.Send(keyMsg("enter"))
	waitFor(t, tm, "core-api cleared")
	tm.Send(keyMsg("q"))

	m := finalModel(t, tm)
	if !m.Quitting() {
		t.Error("the program ended without q being handled")
	}
	if _, ok := h.ov.get("core-api"); ok {
		t.Error("core-api is still overridden after the clear")
	}
	if len(h.ov.forced) != 1 || len(h.ov.cleared) != 1 {
		t.Errorf("force calls %d, clear calls %d", len(h.ov.forced), len(h.ov.cleared))
	}
	for _, r := range m.Rows() {
		if r.Dependency == "core-api" && r.Override != nil {
			t.Errorf("the final model still shows an override on core-api")
		}
	}
	golden.RequireEqual(t, ansi.Strip(m.Render()))
}

func TestProgramProtectedContextRefusesAWrongName(t *testing.T) {
	h := newHarness(t, Options{ContextName: "prod-eu", Protected: true})
	tm := startProgram(t, h)
	waitFor(t, tm, "PROTECTED CONTEXT prod-eu", "screening-sim")
	tm.Send(keyMsg("down"))
	tm.Send(keyMsg("c"))
	waitFor(t, tm, "Clear the active override of openai")
	tm.Send(keyMsg("enter"))
	waitFor(t, tm, `type "prod-eu" to confirm`)
	tm.Type("prod-us")
	tm.Send(keyMsg("enter"))
	waitFor(t, tm, `that is not "prod-eu"`)
	tm.Send(keyMsg("esc"))
	waitFor(t, tm, "canceled: nothing was changed")
	tm.Send(keyMsg("ctrl+c"))
	m := finalModel(t, tm)
	if len(h.ov.cleared) != 0 {
		t.Errorf("cleared %v on a protected context without its name", h.ov.cleared)
	}
	if _, ok := h.ov.get("openai"); !ok || !m.Quitting() {
		t.Error("openai's override is gone, or the program did not quit")
	}
}

func TestProgramFollowsResizes(t *testing.T) {
	h := newHarness(t, Options{})
	tm := startProgram(t, h)
	waitFor(t, tm, "screening-sim")
	tm.resize(132, 30)
	waitFor(t, tm, "provider incident INC-142")
	tm.resize(30, 8)
	waitFor(t, tm, "koshactl dashboard needs at", "least 40x10 (now 30x8)")
	tm.resize(80, 24)
	tm.Send(keyMsg("q"))
	m := finalModel(t, tm)
	lines := strings.Split(m.Render(), "\n")
	if len(lines) != 24 {
		t.Errorf("final screen has %d lines at 80x24", len(lines))
	}
}

func TestProgramRefreshesWithTheRealTimer(t *testing.T) {
	h := newHarness(t, Options{Interval: 20 * time.Millisecond})
	h.m.tick = tea.Tick
	tm := startProgram(t, h)
	h.gauges.set("core-api", 2, 2)
	// The next refreshes pick the change up without a key.
	waitFor(t, tm, "core-api      open")
	tm.Send(keyMsg("q"))
	finalModel(t, tm)
	if n := h.gauges.callCount(); n < 2 {
		t.Errorf("gauge fetches = %d", n)
	}
}
