package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

// detailState is the detail sub-view of one dependency.
type detailState struct {
	dependency string
	scroll     int
	loading    bool
	records    []audit.Record
	err        error
}

// detailLines renders one dependency ([Model.detailContent]) scrolled to
// the detail's offset, in at most height lines.
func (m Model) detailLines(height int) []string {
	lines := m.detailContent()
	// Scroll, never past the end; say when more is below.
	scroll := min(m.detail.scroll, max(len(lines)-height, 0))
	lines = lines[scroll:]
	if len(lines) > height && height > 0 {
		lines = append(lines[:height-1], m.styles.Dim.Render(fmt.Sprintf("  ↓ %d more lines (j/k scroll)", len(lines)-height+1)))
	}
	return lines
}

// auditLines are the detail's last section: the dependency's recent audit
// records, or why there are none.
func (d detailState) auditLines(st styles.Styles) []string {
	lines := []string{"", st.Title.Render("Recent audit")}
	switch {
	case d.loading:
		lines = append(lines, st.Dim.Render("  loading…"))
	case d.err != nil:
		lines = append(lines, st.StatusError.Render("  could not read the audit log: "+oneLine(d.err)))
	case len(d.records) == 0:
		lines = append(lines, st.Dim.Render("  no changes recorded in the retention period"))
	}
	actorW := 0
	for _, rec := range d.records {
		actorW = max(actorW, min(ansi.StringWidth(safe(rec.Actor)), 40))
	}
	for _, rec := range d.records {
		action := safe(strings.TrimPrefix(rec.Action, "breaker."))
		lines = append(lines, fmt.Sprintf("  %s  %s  %s  %s", rec.Time.UTC().Format("01-02 15:04Z"), pad(action, 10),
			pad(ansi.Truncate(safe(rec.Actor), actorW, "…"), actorW), safe(rec.Reason)))
	}
	return lines
}
