// Package report implements `koshactl drill report`: a drill journal
// rendered as a self-contained HTML game-day report, or as a Markdown
// summary (internal/gameday renders both).
package report
