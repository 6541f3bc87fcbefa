// Package gameday renders a drill run's journal as a game-day report: one
// self-contained HTML file (a summary, an SVG timeline of the checks,
// steps, levers, stop conditions and recoveries, the affected
// dependencies' breaker_state over the run, and the detail tables) and a
// Markdown summary for a CI step summary or a pull-request comment.
//
// # Hostile text
//
// Every string in a journal came from a drill file, the store, an HTTP
// answer or a CloudWatch alarm, so the report treats it as hostile. The
// HTML is built with html/template (the SVG too), so each value is escaped
// for where it lands; the page carries a Content-Security-Policy that
// allows no script, no external resource and only its own style element
// (by hash); it has no link built from a value. Values are rendered with
// [textsafe.Line] first, so control characters and bidi marks show as
// escapes. The Markdown form escapes HTML (as entities) and every ASCII
// punctuation character Markdown could read (with a backslash), so a
// value is never a link, an image, an autolink or a table cell break.
package gameday
