package gameday

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/golden"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"golang.org/x/net/html"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
)

var fixtures = map[string]func() *drill.Journal{
	"stopped":    stoppedJournal,
	"killed":     killedJournal,
	"hostile":    hostileJournal,
	"refused":    refusedJournal,
	"guard-lost": guardLostJournal,
}

func renderHTML(t testing.TB, in Input) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, in); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func renderMarkdown(t testing.TB, in Input) string {
	t.Helper()
	var b bytes.Buffer
	if err := Markdown(&b, in); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The Markdown summaries of the fixtures are golden files; so are the
// fixtures as JSON journals (make report-check renders one in Chromium,
// and drill report's tests read them).
func TestMarkdownGolden(t *testing.T) {
	for name, fx := range fixtures {
		t.Run(name, func(t *testing.T) {
			j := fx()
			golden.Check(t, name+".md", renderMarkdown(t, Input{Journal: j}))
			b, err := json.MarshalIndent(j, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name+".journal.json", string(b)+"\n")
		})
	}
}

// parse parses a rendered page.
func parse(t testing.TB, page string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func byID(doc *html.Node, id string) *html.Node {
	var found *html.Node
	walk(doc, func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v == id && found == nil {
			found = n
		}
	})
	return found
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

// The page is self-contained and inert whatever the journal holds: one
// CSP meta tag allowing nothing but the one style element, by its hash;
// no script, no image, no link, no event handler, no URL attribute.
func checkInert(t *testing.T, page string) {
	t.Helper()
	doc := parse(t, page)
	var csp []string
	var styles []string
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "script", "img", "iframe", "object", "embed", "link", "a", "image", "use", "foreignObject", "base", "form", "input", "audio", "video", "source":
			t.Errorf("element <%s> in the report", n.Data)
		case "style":
			styles = append(styles, text(n))
		case "meta":
			if v, _ := attr(n, "http-equiv"); strings.EqualFold(v, "Content-Security-Policy") {
				c, _ := attr(n, "content")
				csp = append(csp, c)
			}
		}
		for _, a := range n.Attr {
			k := strings.ToLower(a.Key)
			if strings.HasPrefix(k, "on") || k == "href" || k == "src" || k == "xlink:href" || k == "style" || k == "action" || k == "srcset" {
				t.Errorf("<%s> has attribute %s=%q", n.Data, a.Key, a.Val)
			}
		}
	})
	if len(csp) != 1 || csp[0] != CSP {
		t.Fatalf("CSP meta tags = %q, want one: %q", csp, CSP)
	}
	for _, want := range []string{"default-src 'none'", "script-src 'none'", "img-src 'none'", "base-uri 'none'", "form-action 'none'"} {
		if !strings.Contains(CSP, want) {
			t.Errorf("CSP lacks %s", want)
		}
	}
	if strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP allows unsafe sources: %s", CSP)
	}
	if len(styles) != 1 || !strings.Contains(CSP, "style-src '"+styleHash(styles[0])+"'") {
		t.Fatalf("%d style elements; the CSP does not allow the one by its hash", len(styles))
	}
}

var clockRE = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}Z$`)

// Structural checks: every step, lever and rollback is in the tables and
// on the timeline, and their times are in order.
func TestHTMLStructure(t *testing.T) {
	for _, name := range []string{"stopped", "killed"} {
		t.Run(name, func(t *testing.T) {
			j := fixtures[name]()
			page := renderHTML(t, Input{Journal: j})
			checkInert(t, page)
			doc := parse(t, page)
			var svgs []*html.Node
			walk(doc, func(n *html.Node) {
				if n.Type == html.ElementNode && n.Data == "svg" {
					svgs = append(svgs, n)
				}
			})
			// The killed run polled no gauges: its page says so instead.
			if want := 1 + min(len(j.GaugeSamples), 1); len(svgs) != want {
				t.Fatalf("%d SVG charts, want %d", len(svgs), want)
			}
			if len(j.GaugeSamples) == 0 && !strings.Contains(text(byID(doc, "gauges-note")), "no breaker_state samples") {
				t.Error("no note says why there is no breaker state chart")
			}
			timeline := text(svgs[0])
			rows := map[string][]string{}
			for _, id := range []string{"steps", "levers"} {
				tb := byID(doc, id)
				if tb == nil {
					t.Fatalf("no table #%s", id)
				}
				walk(tb, func(n *html.Node) {
					if n.Type != html.ElementNode || n.Data != "tr" {
						return
					}
					key := "data-step"
					if id == "levers" {
						key = "data-rollback"
					}
					if v, ok := attr(n, key); ok {
						var cells []string
						for c := n.FirstChild; c != nil; c = c.NextSibling {
							if c.Type == html.ElementNode && c.Data == "td" {
								cells = append(cells, text(c))
							}
						}
						rows[id+":"+v] = cells
					}
				})
			}
			var lastStart string
			for _, s := range j.Steps {
				cells, ok := rows["steps:"+s.ID]
				if !ok {
					t.Errorf("step %s not in the steps table", s.ID)
					continue
				}
				if cells[2] != s.Status {
					t.Errorf("step %s: status %q, want %q", s.ID, cells[2], s.Status)
				}
				if !strings.Contains(timeline, s.ID) {
					t.Errorf("step %s not on the timeline", s.ID)
				}
				if s.StartedAt != nil {
					if !clockRE.MatchString(cells[3]) || cells[3] < lastStart {
						t.Errorf("step %s started %q, after the previous step's %q?", s.ID, cells[3], lastStart)
					}
					lastStart = cells[3]
				}
			}
			for _, rb := range j.Rollbacks {
				cells, ok := rows["levers:"+rb.ID]
				if !ok {
					t.Errorf("rollback %s not in the levers table", rb.ID)
					continue
				}
				pulled, back := cells[3], cells[4]
				if !clockRE.MatchString(pulled) || !clockRE.MatchString(back[:13]) || back[:13] < pulled {
					t.Errorf("rollback %s: pulled %q, put back %q: want both, in order", rb.ID, pulled, back)
				}
				if !strings.Contains(timeline, rb.ID+" "+rb.Subject) {
					t.Errorf("lever %s not on the timeline", rb.ID)
				}
			}
			glance := text(byID(doc, "glance"))
			for _, want := range []string{"Pulled", "breaker#openai for ", "rl#agent-1 for ", "Put back", "all "} {
				if !strings.Contains(glance, want) {
					t.Errorf("at a glance lacks %q: %s", want, glance)
				}
			}
			switch name {
			case "stopped":
				for _, want := range []string{"Stopped by", "api-5xx", "kosha-api-5xx ALARM: Threshold Crossed: 3 datapoints > 1", "by the run's rollback"} {
					if !strings.Contains(glance, want) {
						t.Errorf("at a glance lacks %q: %s", want, glance)
					}
				}
				if !strings.Contains(timeline, "stopped: api-5xx") || !strings.Contains(text(svgs[1]), "gw-2") {
					t.Error("the stop line or the breaker states are missing")
				}
			case "killed":
				for _, want := range []string{"the run's process died", "drill recover by oncall@example.com", "by 09:32:10.700Z"} {
					if !strings.Contains(glance, want) {
						t.Errorf("at a glance lacks %q: %s", want, glance)
					}
				}
			}
		})
	}
}

// Bars stay within the plot and every x and width is a plain number.
func TestChartGeometry(t *testing.T) {
	for name, fx := range fixtures {
		r := build(Input{Journal: fx()})
		for _, c := range []*chart{r.Timeline, r.Gauges} {
			if c == nil {
				continue
			}
			for _, row := range c.Rows {
				for _, b := range row.Bars {
					if b.X < plotX || b.X+b.W > plotX+plotW+2.01 || b.W <= 0 {
						t.Errorf("%s: bar %q at %.1f+%.1f outside the plot", name, b.Title, b.X, b.W)
					}
				}
			}
			if !slices.IsSortedFunc(c.Ticks, func(a, b tick) int { return int(a.X - b.X) }) || len(c.Ticks) < 2 {
				t.Errorf("%s: ticks %v", name, c.Ticks)
			}
		}
	}
}

// The done-when: <script>, an attribute break-out and Markdown
// link syntax in every string render as text, in both forms.
func TestHostileTextRendersAsText(t *testing.T) {
	j := hostileJournal()
	page := renderHTML(t, Input{Journal: j})
	checkInert(t, page)
	for _, bad := range []string{"<script", "<img", "</style><", "\x1b", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	body := text(parse(t, page))
	for _, want := range []string{hScript, hImg, "[click me](javascript:alert(3))", `red\x1b[31m text \u202eevil\u202c`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page's text lacks %q", want)
		}
	}
	// The guard's cause and fix, as the guard section shows them.
	guard := text(byID(parse(t, page), "guard"))
	for _, want := range []string{hImg + hScript + `red\x1b[31m text \u202eevil\u202c`, "[click me](javascript:alert(3))"} {
		if !strings.Contains(guard, want) {
			t.Errorf("the guard section's text lacks %q: %s", want, guard)
		}
	}

	m := renderMarkdown(t, Input{Journal: j})
	for _, bad := range []string{"<script", "<img", "![", "https://", "www.evil", "<https", "\x1b", "\u202e", "\n\n\nline two", "| cell |"} {
		if strings.Contains(m, bad) {
			t.Errorf("the Markdown contains %q", bad)
		}
	}
	for _, want := range []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `\[click me\](javascript:alert(3))`, `https\://evil.example`, `\| cell \|`} {
		if !strings.Contains(m, want) {
			t.Errorf("the Markdown lacks %q", want)
		}
	}
	// Each table row stays one row: a value's | and newline do not split it.
	for _, line := range strings.Split(m, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") > 9 {
			t.Errorf("a table row split: %s", line)
		}
	}
}

// md escapes what Markdown would interpret and nothing else: the raw
// summary of an ordinary run reads as plain text.
func TestMarkdownEscapesOnlyWhatMarkdownInterprets(t *testing.T) {
	for in, want := range map[string]string{
		"a*b_c":                            `a\*b\_c`,
		"[x](y)":                           `\[x\](y)`,
		"<b>&amp;":                         `&lt;b&gt;&amp;amp;`,
		"# h\n- li":                        `\# h - li`,
		"- li":                             `\- li`,
		"12. x ~~y~~ `z` |a| $m$":          "12\\. x \\~\\~y\\~\\~ \\`z\\` \\|a\\| \\$m\\$",
		"https://x.io www.y WWW.z ci@x.io": `https\://x.io www\.y WWW\.z ci\@x.io`,
		"openai's probe (gw-1): 3.5 s":     "openai's probe (gw-1): 3.5 s",
		"http://127.0.0.1:9000/metrics":    `http\://127.0.0.1:9000/metrics`,
		"ok":                               "ok",
	} {
		if got := md(in); got != want {
			t.Errorf("md(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever a value holds, GitHub-flavored Markdown (tables, autolinks,
// strikethrough) renders it as the one line of text it is, in a table
// cell, a list item and a quote: no link, emphasis, code, tag or block.
func TestMarkdownValuesRenderAsTheirText(t *testing.T) {
	gfm := goldmark.New(goldmark.WithExtensions(extension.GFM))
	for _, v := range []string{
		hScript, hImg, "[click me](javascript:alert(3))", "![x](https://evil.example/p.png)", "<https://evil.example>",
		"www.evil.example and https://evil.example/x?y=1", "ci@example.com", "*em* _em_ **b** ~~s~~ `c` $x$",
		"# heading", "> quote", "- item", "+ item", "1. item", "3) item", "=== ", "--- ", "a | b | c", `back\slash \*`,
		"&amp; &#x41; &copy;", "trailing \\", "openai's 5xx: 3.5 (gw-1)",
	} {
		want := one(v)
		for _, doc := range []string{"| h |\n|---|\n| " + md(v) + " |\n", "- " + md(v) + "\n", "> " + md(v) + "\n"} {
			var out bytes.Buffer
			if err := gfm.Convert([]byte(doc), &out); err != nil {
				t.Fatal(err)
			}
			n := parse(t, out.String())
			walk(n, func(e *html.Node) {
				if e.Type == html.ElementNode && !slices.Contains([]string{"html", "head", "body", "p", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "blockquote"}, e.Data) {
					t.Errorf("%q in %q renders a <%s>: %s", v, doc, e.Data, out.String())
				}
			})
			if got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text(n)), "h")); got != want {
				t.Errorf("%q in %q renders as the text %q, want %q", v, doc, got, want)
			}
		}
	}
}

// A journal with a later version than this koshactl writes is refused
// by the command; within the renderer a version 1 journal (no gauge
// samples, stop evaluations or audit refs) still renders, saying so.
func TestVersion1JournalRendersWithoutSamples(t *testing.T) {
	j := stoppedJournal()
	j.Version, j.GaugeSamples, j.StopEvaluations, j.Audit = 1, nil, nil, nil
	r := build(Input{Journal: j})
	if r.Gauges != nil || !strings.Contains(r.GaugesNote, "no breaker_state samples") {
		t.Errorf("gauges %v, note %q", r.Gauges, r.GaugesNote)
	}
	page := renderHTML(t, Input{Journal: j})
	checkInert(t, page)
	if !strings.Contains(page, "stopped: api-5xx") {
		t.Error("the stop is not on the timeline")
	}
	// Samples fetched by the command replace the (missing) recorded ones.
	r = build(Input{Journal: j, Samples: stoppedJournal().GaugeSamples, SamplesFrom: "prometheus http://127.0.0.1:1/metrics"})
	if r.Gauges == nil || !strings.Contains(r.GaugesNote, "fetched from prometheus") {
		t.Errorf("fetched samples: gauges %v, note %q", r.Gauges != nil, r.GaugesNote)
	}
}

func TestFormatFor(t *testing.T) {
	for path, want := range map[string]string{"a/b.MD": FormatMarkdown, "x.markdown": FormatMarkdown, "r.html": FormatHTML, "r": FormatHTML, "md": FormatHTML} {
		if got := FormatFor(path); got != want {
			t.Errorf("FormatFor(%q) = %s, want %s", path, got, want)
		}
	}
	if err := Render(&bytes.Buffer{}, "pdf", Input{Journal: stoppedJournal()}); err == nil {
		t.Error("Render accepted format pdf")
	}
}

// A refused run and a lost guard: the guard's record (which guard, its
// cause and fix; since when and how many polls for a lost one) is at the
// top, the preflight's evaluations in their own table, and the timeline
// marks the moment; a lost guard's rollbacks follow. A breaker step that
// waited for the fleet says what the gauges confirmed.
func TestHTMLGuardOutcomes(t *testing.T) {
	for _, name := range []string{"refused", "guard-lost"} {
		t.Run(name, func(t *testing.T) {
			j := fixtures[name]()
			page := renderHTML(t, Input{Journal: j})
			checkInert(t, page)
			doc := parse(t, page)
			g := byID(doc, "guard")
			if g == nil {
				t.Fatal("no #guard section")
			}
			if phase, _ := attr(g, "data-phase"); phase != j.Guard.Phase {
				t.Errorf("guard section's phase %q, want %q", phase, j.Guard.Phase)
			}
			guard, glance := text(g), text(byID(doc, "glance"))
			for _, want := range []string{j.Guard.Role, j.Guard.Condition, j.Guard.Cause, j.Guard.Fix, clock(j.Guard.At)} {
				if !strings.Contains(guard, want) {
					t.Errorf("the guard section lacks %q: %s", want, guard)
				}
			}
			for _, want := range []string{j.Guard.Condition, j.Guard.Cause, "Fix" + j.Guard.Fix} {
				if !strings.Contains(glance, want) {
					t.Errorf("at a glance lacks %q: %s", want, glance)
				}
			}
			var svg *html.Node
			walk(doc, func(n *html.Node) {
				if svg == nil && n.Type == html.ElementNode && n.Data == "svg" {
					svg = n
				}
			})
			timeline := text(svg)
			pre := byID(doc, "preflight")
			if pre == nil {
				t.Fatal("no #preflight table")
			}
			var preRows int
			walk(pre, func(n *html.Node) {
				if n.Type == html.ElementNode && n.Data == "tr" && n.Parent.Data == "tbody" {
					preRows++
				}
			})
			if preRows != len(j.Preflight) {
				t.Errorf("%d preflight rows, want %d", preRows, len(j.Preflight))
			}
			for _, c := range j.Preflight {
				if !strings.Contains(text(pre), c.Name) || !strings.Contains(timeline, c.Name) {
					t.Errorf("preflight check %s missing from the table or the timeline", c.Name)
				}
				// Issue 45: a guard is named by its role, and says it can
				// be evaluated, never that it "held" (its name would read
				// as the event it guards against).
				label := c.Role + ` "` + c.Name + `"`
				if !strings.Contains(text(pre), label) || !strings.Contains(timeline, label) {
					t.Errorf("preflight check %s is not named %s in the table and the timeline", c.Name, label)
				}
			}
			if strings.Contains(timeline, "held") && j.Outcome == drill.OutcomeRefused {
				t.Errorf("the refused run's timeline says a guard held: %s", timeline)
			}
			switch name {
			case "refused":
				for _, want := range []string{"Refused", "preflight at 09:30:00.300Z", "1 of 2 guards could not be evaluated", "no lever: the run was refused"} {
					if !strings.Contains(glance, want) {
						t.Errorf("at a glance lacks %q: %s", want, glance)
					}
				}
				if !strings.Contains(text(pre), "cannot be evaluated") || !strings.Contains(guard, "Nothing was done") {
					t.Errorf("the preflight or the guard section does not say nothing was done: %s / %s", text(pre), guard)
				}
				if !strings.Contains(timeline, "refused: api-5xx") {
					t.Error("the timeline does not mark the refusal")
				}
				if strings.Contains(glance, "Put back") {
					t.Errorf("a refused run pulled nothing, yet: %s", glance)
				}
			case "guard-lost":
				for _, want := range []string{"Guard lost", "since 09:30:10.000Z (+10s), 4 polls in a row (grace 3 polls and 5s)", "lost at 09:30:18.000Z",
					"Put back", "all 1 by 09:30:18.600Z", "force-openai: fleet confirmed openai forced after 3.2s: forced on 2 of 2 instances"} {
					if !strings.Contains(glance, want) {
						t.Errorf("at a glance lacks %q: %s", want, glance)
					}
				}
				for _, want := range []string{"4 failed evaluations in a row", "09:30:10.000Z (8s before it was lost)", "3 polls and 5s"} {
					if !strings.Contains(guard, want) {
						t.Errorf("the guard section lacks %q: %s", want, guard)
					}
				}
				if !strings.Contains(timeline, "guard lost: core-api-closed") || !strings.Contains(timeline, "unevaluable, 4 polls") {
					t.Errorf("the timeline does not draw the lost guard: %s", timeline)
				}
				// The rollbacks come after the guard was lost.
				if rb := j.Rollbacks[0]; !rb.StartedAt.After(j.Guard.At) || !strings.Contains(text(byID(doc, "levers")), "the run's rollback") {
					t.Error("the lever's rollback is not shown after the lost guard")
				}
				var fleet *html.Node
				walk(byID(doc, "steps"), func(n *html.Node) {
					if v, ok := attr(n, "data-fleet"); ok && fleet == nil {
						fleet = n
						if v != "good" {
							t.Errorf("fleet badge %q, want good", v)
						}
					}
				})
				if fleet == nil || text(fleet) != "fleet confirmed forced after 3.2s" {
					t.Errorf("the force-open step has no fleet badge")
				}
			}
		})
	}
}

// A wait that the fleet did not confirm is the glance's bad news.
func TestFleetNotConfirmed(t *testing.T) {
	j := guardLostJournal()
	f := j.Steps[0].Fleet
	f.Confirmed, f.Summary, f.ElapsedSeconds = false, "forced on 1 of 2 instances (gw-2)", 45
	j.Steps[0].Status, j.Steps[0].Error = drill.StatusFailed, "the fleet did not confirm openai forced within 45s: forced on 1 of 2 instances (gw-2)"
	r := build(Input{Journal: j})
	var fleet *glance
	for i := range r.Glance {
		if r.Glance[i].Label == "Fleet" {
			fleet = &r.Glance[i]
		}
	}
	if fleet == nil || fleet.Class != "bad" || !strings.Contains(fleet.Text, "fleet did NOT confirm openai forced within 45s: forced on 1 of 2 instances (gw-2)") {
		t.Errorf("fleet glance %+v", fleet)
	}
	if r.Steps[0].FleetClass != "bad" || !strings.Contains(r.Steps[0].Fleet, "did NOT confirm") {
		t.Errorf("step fleet badge %q (%s)", r.Steps[0].Fleet, r.Steps[0].FleetClass)
	}
}

// A lever whose rollback's outcome is unknown (the store could not be
// reached to settle it) was not put back as far as anyone can tell: the
// report says so, with the one line that says how to check, and never
// speaks of a missing record or its repair: a lever's change and its
// record are one write.
func TestRollbackWhoseOutcomeIsUnknownIsNotPutBack(t *testing.T) {
	j := stoppedJournal()
	j.Outcome, j.Reason, j.Stop, j.ExitCode, j.RollbacksOK = drill.OutcomePassed, "", nil, exitcode.Rollback, false
	rb := &j.Rollbacks[0]
	rb.Status, rb.Detail = drill.StatusFailed, ""
	rb.Error = "restore override of openai: the outcome of the change is unknown: the store did not answer it, nor the read that settles it (get audit#0946684800000#43cf25949c438e6c: store unavailable): check with koshactl breaker get openai"
	r := build(Input{Journal: j})
	if r.Good {
		t.Error("report shown good: a lever may still be moved")
	}
	row := r.Levers[0]
	if row.Back != "not put back" || row.Class != "bad" || !strings.Contains(row.Error, "check with koshactl breaker get openai") {
		t.Errorf("lever row %+v: want not put back, bad, with how to check", row)
	}
	var labels []string
	for _, g := range r.Glance {
		labels = append(labels, g.Label)
	}
	if !slices.Contains(labels, "NOT put back") || slices.Contains(labels, "Not audited") {
		t.Errorf("glance labels %v: want NOT put back, nothing of audit", labels)
	}
	for name, page := range map[string]string{"markdown": renderMarkdown(t, Input{Journal: j}), "html": renderHTML(t, Input{Journal: j})} {
		if !strings.Contains(page, "NOT put back") || !strings.Contains(page, "breaker get") || strings.Contains(page, "repair") || strings.Contains(page, "audited") {
			t.Errorf("%s report does not say the lever may be moved and how to check, or speaks of a repair:\n%s", name, page)
		}
	}
}

// Issue 26 asked for the reasons, escaped: why each lever was pulled
// stands beside its step and its lever, in both forms.
func TestReportSaysWhyEachLeverWasPulled(t *testing.T) {
	j := stoppedJournal()
	doc := parse(t, renderHTML(t, Input{Journal: j}))
	for _, id := range []string{"steps", "levers"} {
		if got := text(byID(doc, id)); !strings.Contains(got, "why: alarm-guarded game day (CHG-1042)") {
			t.Errorf("the %s table does not say why openai was forced open: %s", id, got)
		}
	}
	m := renderMarkdown(t, Input{Journal: j})
	for _, want := range []string{"| force-openai | breaker.force\\_open | passed | 400ms | alarm-guarded game day (CHG-1042) |",
		"| rb-1 | breaker#openai | alarm-guarded game day (CHG-1042) |"} {
		if !strings.Contains(m, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, m)
		}
	}
	// A hostile reason is text in both.
	h := hostileJournal()
	page := renderHTML(t, Input{Journal: h})
	checkInert(t, page)
	if !strings.Contains(text(byID(parse(t, page), "steps")), "why: "+hScript+hLink) {
		t.Error("the hostile reason is not shown as text")
	}
}

// Issue 46: the report says per lever what it did to the platform's tools
// while it held, from its force's audit record (the tools and the rate the
// record saw), over the time it was held: put back, its expiry, or none.
func TestReportSaysWhatEachLeverDidToTheTools(t *testing.T) {
	rate := 120.0
	withImpact := func(im *drill.LeverImpact) *drill.Journal {
		j := stoppedJournal()
		// The force is recorded within the millisecond the lever was
		// registered in (a record keeps milliseconds, the registration
		// does not).
		j.Rollbacks[0].RegisteredAt = at(0.5).Add(400 * time.Microsecond)
		j.Audit[0].At, j.Audit[0].Action, j.Audit[0].Impact = at(0.5), breaker.ActionForceOpen, im
		return j
	}
	degraded := &drill.LeverImpact{Tools: []drill.ToolRate{{Tool: "search_knowledge_base", Behaviour: "degraded", CallsPerMinute: &rate}},
		RatesSource: "prometheus http://127.0.0.1:9000/metrics"}

	j := withImpact(degraded)
	// Held from 0.5 s to 18.6 s: 120 a minute over 18.1 s.
	want := "search_knowledge_base degraded · 120 calls/min · about 36 calls while held"
	if got := build(Input{Journal: j}).Levers; got[0].Impact != want || got[1].Impact != "" {
		t.Errorf("levers' impact %q, %q; want %q and none for the bucket", got[0].Impact, got[1].Impact, want)
	}
	if got := text(byID(parse(t, renderHTML(t, Input{Journal: j})), "levers")); !strings.Contains(got, "impact: "+want) {
		t.Errorf("the HTML levers table lacks the impact: %s", got)
	}
	if m := renderMarkdown(t, Input{Journal: j}); !strings.Contains(m, "impact: search\\_knowledge\\_base degraded · 120 calls/min · about 36 calls while held") {
		t.Errorf("the Markdown lacks the impact:\n%s", m)
	}

	// Not put back: it held until its expiry (300 s).
	j = withImpact(degraded)
	j.Rollbacks[0].Status, j.Rollbacks[0].EndedAt = drill.StatusFailed, nil
	if got, want := build(Input{Journal: j}).Levers[0].Impact, "about 600 calls until its expiry"; !strings.HasSuffix(got, want) {
		t.Errorf("impact of a lever not put back %q, want it to end %q", got, want)
	}

	// No rate read: the tools, and why.
	j = withImpact(&drill.LeverImpact{Tools: []drill.ToolRate{{Tool: "search_knowledge_base", Behaviour: "degraded"}}, RatesError: "connection refused"})
	if got, want := build(Input{Journal: j}).Levers[0].Impact, "search_knowledge_base degraded; no call rate: connection refused"; got != want {
		t.Errorf("impact without a rate %q, want %q", got, want)
	}

	// An override no instance obeys changed no tool.
	j = withImpact(&drill.LeverImpact{Tools: []drill.ToolRate{}})
	if got := build(Input{Journal: j}).Levers[0].Impact; got != "no tool changed behaviour" {
		t.Errorf("impact of an override nothing obeys %q", got)
	}

	// A force of another lever, or one before this lever was registered,
	// says nothing of it.
	j = withImpact(degraded)
	j.Audit[0].Subject = "breaker#core-api"
	if got := build(Input{Journal: j}).Levers[0].Impact; got != "" {
		t.Errorf("another lever's force gave this one an impact: %q", got)
	}
	j = withImpact(degraded)
	j.Audit[0].At = at(0.4)
	if got := build(Input{Journal: j}).Levers[0].Impact; got != "" {
		t.Errorf("a force before the lever's registration gave it an impact: %q", got)
	}
}
