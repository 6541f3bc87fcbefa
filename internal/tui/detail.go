package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/textsafe"
	"github.com/kosha-platform/koshactl/internal/tui/keys"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

// detailPane is the detail of one dependency, a child model in the manner
// of glow's pager: its lines sit in a viewport, which owns the scroll
// offset and keeps it valid when the lines or the height change. The root
// model sets the pane's size and content after every update
// ([Model.syncDetail]); the pane's update scrolls and its view shows the
// lines in sight.
type detailPane struct {
	dependency string
	loading    bool
	records    []audit.Record
	err        error

	viewport viewport.Model
	// lines are the content the viewport holds, kept to be shown: the
	// viewport's own View pads every line to the width and the height,
	// while the dashboard pads its frame itself.
	lines []string
}

// newDetailPane returns the pane of dependency, scrolled to the top; loading
// says its audit records are being read.
func newDetailPane(dependency string, loading bool, k keys.KeyMap) detailPane {
	vp := viewport.New()
	// Only the dashboard's own keys scroll: the viewport's defaults (f, b,
	// d, u, space…) are other levers here.
	vp.KeyMap = viewport.KeyMap{Up: k.Up, Down: k.Down}
	return detailPane{dependency: dependency, loading: loading, viewport: vp}
}

// setSize gives the pane the screen's width and the body's height; a
// taller pane has less to scroll, so an offset past the new end moves back
// to it.
func (p *detailPane) setSize(width, height int) {
	p.viewport.SetWidth(width)
	p.viewport.SetHeight(height)
	if p.viewport.PastBottom() {
		p.viewport.GotoBottom()
	}
}

// setContent replaces the pane's lines (none holds a newline); the viewport
// moves an offset past the new end back to it.
func (p *detailPane) setContent(lines []string) {
	p.lines = lines
	p.viewport.SetContentLines(lines)
}

// update scrolls the pane on the keys its viewport was given.
func (p detailPane) update(msg tea.Msg) (detailPane, tea.Cmd) {
	var cmd tea.Cmd
	p.viewport, cmd = p.viewport.Update(msg)
	return p, cmd
}

// view is the lines in sight, at most the pane's height; when more is
// below, the last row says how much.
func (p detailPane) view(st styles.Styles) []string {
	height := p.viewport.Height()
	if height <= 0 {
		return nil
	}
	top := min(p.viewport.YOffset(), len(p.lines))
	end := min(top+height, len(p.lines))
	if p.viewport.AtBottom() {
		return p.lines[top:end]
	}
	out := append(make([]string, 0, end-top), p.lines[top:end-1]...)
	return append(out, st.Dim.Render(fmt.Sprintf("  ↓ %d more lines (j/k scroll)", len(p.lines)-end+1)))
}

// auditLines are the pane's last section: the dependency's recent audit
// records, or why there are none; a lever change recorded since the table's
// policy (since) without an approval is marked UNAPPROVED, as audit list
// marks it.
func (p detailPane) auditLines(st styles.Styles, since time.Time) []string {
	lines := []string{"", st.Title.Render("Recent audit")}
	switch {
	case p.loading:
		lines = append(lines, st.Dim.Render("  loading…"))
	case p.err != nil:
		lines = append(lines, st.StatusError.Render("  could not read the audit log: "+textsafe.OneLine(p.err.Error())))
	case len(p.records) == 0:
		lines = append(lines, st.Dim.Render("  no changes recorded in the retention period"))
	}
	actorW := 0
	for _, rec := range p.records {
		actorW = max(actorW, min(ansi.StringWidth(safe(rec.Actor)), 40))
	}
	for _, rec := range p.records {
		action := safe(strings.TrimPrefix(rec.Action, "breaker."))
		line := fmt.Sprintf("  %s  %s  %s  %s", rec.Time.UTC().Format("01-02 15:04Z"), pad(action, 10),
			pad(ansi.Truncate(safe(rec.Actor), actorW, "…"), actorW), safe(rec.Reason))
		// An override's records are all lever changes (its force-opens and
		// clears): flagged by the rule of any lever write.
		if !rec.DataPlane && policy.UnapprovedAt(rec.Time, rec.Approval, since) {
			line += " " + st.Warning.Render("UNAPPROVED")
		}
		if rec.DataPlane {
			// The data plane's word, never an operator's lever change.
			line += " " + st.Dim.Render("(data plane)")
		}
		lines = append(lines, line)
	}
	return lines
}
