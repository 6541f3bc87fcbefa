package gameday

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

//go:embed assets/report.html.tmpl
var assets embed.FS

// css is the report's stylesheet, embedded as a string: no copy at start-up.
//
//go:embed assets/report.css
var css string

var (
	// CSP is the report's Content-Security-Policy: nothing may load or
	// run (no script, image, font, frame or connection), and the one style
	// element is allowed by its hash.
	CSP = "default-src 'none'; style-src '" + styleHash(css) + "'; img-src 'none'; font-src 'none'; script-src 'none'; " +
		"connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
	// page is parsed on the first report, not at start-up: every koshactl
	// process links this package, few render a report.
	page = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
			"f":     func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
			"add":   func(a, b float64) float64 { return a + b },
			"odd":   func(i int) bool { return i%2 == 1 },
			"arrow": arrow,
		}).ParseFS(assets, "assets/report.html.tmpl"))
	})
)

// styleHash is the CSP source of a style element's text: 'sha256-...'.
func styleHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// arrow is the points of the triangle at the axis's end of a clipped bar.
func arrow(x, midY float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	return f(x) + "," + f(midY-6) + " " + f(x+9) + "," + f(midY) + " " + f(x) + "," + f(midY+6)
}

// HTML writes the report of in.Journal as one self-contained HTML page.
// Nothing is written when rendering fails.
func HTML(w io.Writer, in Input) error {
	if in.Journal == nil {
		return fmt.Errorf("render report: no journal")
	}
	var buf bytes.Buffer
	err := page().Execute(&buf, struct {
		CSP string
		CSS template.CSS
		R   *report
	}{CSP, template.CSS(css), build(in)}) //nolint:gosec // G203: the report's own embedded stylesheet, no value of the journal
	if err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// Formats of the report.
const (
	FormatHTML     = "html"
	FormatMarkdown = "markdown"
)

// Render writes the report of in as format: html or markdown.
func Render(w io.Writer, format string, in Input) error {
	switch format {
	case FormatHTML:
		return HTML(w, in)
	case FormatMarkdown:
		return Markdown(w, in)
	}
	return fmt.Errorf("render report: unknown format %q: use html or markdown", format)
}

// FormatFor is the format of a report file by its name: Markdown for
// .md and .markdown, HTML otherwise.
func FormatFor(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".markdown":
		return FormatMarkdown
	}
	return FormatHTML
}
