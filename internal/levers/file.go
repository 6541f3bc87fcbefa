package levers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Version is the levers file format this koshactl reads.
const Version = 1

// RepeatWeekly makes a window recur every week from its first start.
const RepeatWeekly = "weekly"

// MaxFileSize bounds a levers file (it is read whole).
const MaxFileSize = 1 << 20

// MaxWindows bounds the windows of one file: every pair of one dependency
// is compared.
const MaxWindows = 1000

// maxProblems is how many problems a refused file lists; the rest are
// counted. A 1 MiB file of one window repeated would otherwise list one
// overlap per pair: hundreds of millions of lines, and the memory for them.
const maxProblems = 100

// week is how often a weekly window recurs.
const week = 7 * 24 * time.Hour

// weekSeconds is a week in seconds, a window's unit.
const weekSeconds = int64(week / time.Second)

// File is a parsed, checked levers file.
type File struct {
	// Name identifies the file in the markers of the overrides it manages:
	// the file's name: field, else its base name without extension.
	Name    string
	Context string
	Windows []Window
}

// Window is one planned override: Dependency forced open from Start to End
// (and every week after, when Repeat is weekly).
type Window struct {
	// ID names the window in its marker and in messages: the file's id:
	// field, else dependency@start.
	ID         string
	Dependency string
	Reason     string
	Start, End time.Time
	Repeat     string
	// Line is where the window starts in the file.
	Line int
}

// Duration is how long each occurrence of the window lasts.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// Hash binds the window's content: a change of any field is a new hash, so
// an override written for the old content is not taken for the new one.
func (w Window) Hash() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{w.ID, w.Dependency, w.Reason, w.Start.UTC().Format(time.RFC3339Nano),
		w.End.UTC().Format(time.RFC3339Nano), w.Repeat}, "\x00")))
	return hex.EncodeToString(sum[:])
}

// At is the occurrence of w in force at t: its start and end, and whether
// one is. A weekly window's occurrences start every week from Start.
func (w Window) At(t time.Time) (start, end time.Time, ok bool) {
	start = w.Start
	if w.Repeat == RepeatWeekly && t.After(w.Start) {
		// In seconds: t.Sub saturates at 292 years, and a weekly window
		// started earlier (every week since 1700) landed on a wrong week.
		weeks := (t.Unix() - w.Start.Unix()) / weekSeconds
		start = time.Unix(w.Start.Unix()+weeks*weekSeconds, 0).UTC()
	}
	end = start.Add(w.Duration())
	return start, end, !t.Before(start) && t.Before(end)
}

// Next is the first occurrence of w that ends after t (the one in force at
// t, or the next to open); ok is false for a one-off window already over.
func (w Window) Next(t time.Time) (start, end time.Time, ok bool) {
	start, end, _ = w.At(t)
	if !end.After(t) {
		if w.Repeat != RepeatWeekly {
			return start, end, false
		}
		start, end = start.Add(week), end.Add(week)
	}
	return start, end, true
}

// Rules are what a file is checked against: the context it is applied to.
type Rules struct {
	// Context is the context's name; the file's context: must name it.
	Context string
	// Known are the context's dependencies; a window for another is refused.
	Known []string
	// MaxOverride bounds a window's length (the context's max-override;
	// zero: breaker.DefaultMaxOverride).
	MaxOverride time.Duration
}

// Problem is one thing wrong in a file, at its line.
type Problem struct {
	Line int
	Msg  string
}

// ProblemsError lists every problem found in a file; nothing of it is
// applied. It is a usage error (exit 2).
type ProblemsError struct {
	File     string
	Problems []Problem
}

func (e *ProblemsError) Error() string { return strings.Join(e.ErrorLines(), "\n") }

// ErrorLines are the problems, one a line (FILE:LINE: problem), which the
// CLI prints each on a line of its own.
func (e *ProblemsError) ErrorLines() []string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = fmt.Sprintf("%s:%d: %s", textsafe.Line(e.File), p.Line, p.Msg)
	}
	return lines
}

// Unwrap makes a ProblemsError an [ErrInvalidFile]: a usage error.
func (e *ProblemsError) Unwrap() error { return ErrInvalidFile }

// ErrInvalidFile is the kind of every levers file problem.
var ErrInvalidFile = exitcode.New(exitcode.Usage, "invalid levers file")

// Parse reads a levers file (path names it in messages) and checks it
// against r: every problem is reported with its line, and a file with any
// is refused whole.
func Parse(path string, data []byte, r Rules) (*File, error) {
	p := &parser{path: path, rules: r}
	f := p.parse(data)
	if p.found > 0 {
		slices.SortStableFunc(p.problems, func(a, b Problem) int { return a.Line - b.Line })
		if more := p.found - len(p.problems); more > 0 {
			p.problems = append(p.problems, Problem{Line: p.problems[len(p.problems)-1].Line,
				Msg: fmt.Sprintf("and %d more problem(s): fix these first", more)})
		}
		return nil, &ProblemsError{File: path, Problems: p.problems}
	}
	return f, nil
}

type parser struct {
	path     string
	rules    Rules
	problems []Problem
	// found counts every problem, listed or not (past maxProblems).
	found int
}

func (p *parser) add(line int, format string, args ...any) {
	p.found++
	if len(p.problems) < maxProblems {
		p.problems = append(p.problems, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
	}
}

func (p *parser) parse(data []byte) *File {
	if len(data) > MaxFileSize {
		p.add(1, "the file is %d bytes, more than a levers file may be (%d): split it", len(data), MaxFileSize)
		return nil
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		p.add(yamlLine(err), "not YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		p.add(max(doc.Line, 1), "want a mapping with version, context and windows")
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		p.add(max(next.Line, 1), "a second YAML document (after ---): a levers file is one document; remove it, or make it a file of its own")
		return nil
	}
	if !p.plain(doc.Content[0]) {
		return nil
	}
	root := doc.Content[0]
	f := &File{Name: baseName(p.path)}
	seen := map[string]bool{}
	var windows *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		seen[k.Value] = true
		switch k.Value {
		case "version":
			if v.Value != fmt.Sprint(Version) {
				p.add(v.Line, "version %s: this koshactl reads version %d files", textsafe.Quote(v.Value), Version)
			}
		case "context":
			f.Context = v.Value
			if p.rules.Context != "" && v.Value != p.rules.Context {
				p.add(v.Line, "the file is for context %s, not %s: use --context %s, or fix context:", textsafe.Quote(v.Value),
					textsafe.Quote(p.rules.Context), textsafe.Quote(v.Value))
			}
		case "name":
			if !validName(v.Value) {
				p.add(v.Line, "name %s: use 1-63 lowercase letters, digits, dots, hyphens or underscores", textsafe.Quote(v.Value))
			}
			f.Name = v.Value
		case "windows":
			windows = v
		default:
			p.add(k.Line, "unknown field %s: a levers file has version, context, name and windows", textsafe.Quote(k.Value))
		}
	}
	for _, req := range []string{"version", "context", "windows"} {
		if !seen[req] {
			p.add(root.Line, "%s: is missing", req)
		}
	}
	if windows != nil {
		switch {
		case windows.Kind != yaml.SequenceNode:
			p.add(windows.Line, "windows: want a list of windows")
		case len(windows.Content) > MaxWindows:
			p.add(windows.Line, "%d windows, more than a levers file may hold (%d): split the file (give each its own name:)", len(windows.Content), MaxWindows)
		default:
			for _, n := range windows.Content {
				if w, ok := p.window(n); ok {
					f.Windows = append(f.Windows, w)
				}
			}
		}
	}
	p.overlaps(f.Windows)
	return f
}

// window reads and checks one window.
func (p *parser) window(n *yaml.Node) (Window, bool) {
	w := Window{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		p.add(n.Line, "a window is a mapping with dependency, reason, start and end (or duration)")
		return w, false
	}
	before := p.found
	var dur time.Duration
	var endLine, durLine int
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "id":
			if !validName(v.Value) {
				p.add(v.Line, "id %s: use 1-63 lowercase letters, digits, dots, hyphens or underscores", textsafe.Quote(v.Value))
			}
			w.ID = v.Value
		case "dependency":
			w.Dependency = v.Value
			if err := breaker.ValidateDependency(v.Value); err != nil {
				p.add(v.Line, "%v", err)
			} else if err := breaker.CheckKnownDependency(v.Value, p.rules.Known); err != nil {
				p.add(v.Line, "%v", err)
			}
		case "reason":
			// Checked as stored: a block scalar's final newline, or a
			// reason of blanks, passed a check of the trimmed text and
			// was written into the override as it was.
			w.Reason = strings.TrimSpace(v.Value)
			if err := audit.ValidateReason(w.Reason); err != nil {
				p.add(v.Line, "reason: %v", err)
			}
		case "start":
			w.Start = p.instant(v, "start")
		case "end":
			w.End, endLine = p.instant(v, "end"), v.Line
		case "duration":
			d, err := time.ParseDuration(v.Value)
			switch {
			case err != nil || d <= 0:
				p.add(v.Line, "duration %s: want a positive duration such as 30m or 2h", textsafe.Quote(v.Value))
			case d%time.Second != 0:
				p.add(v.Line, "duration %s has a fraction of a second: a window lasts whole seconds", textsafe.Quote(v.Value))
			}
			dur, durLine = d, v.Line
		case "repeat":
			if v.Value != RepeatWeekly {
				p.add(v.Line, "repeat %s: the one repeat is weekly", textsafe.Quote(v.Value))
			}
			w.Repeat = v.Value
		default:
			p.add(k.Line, "unknown field %s: a window has id, dependency, reason, start, end or duration, and repeat", textsafe.Quote(k.Value))
		}
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"dependency", w.Dependency != ""}, {"reason", w.Reason != ""}, {"start", !w.Start.IsZero() || p.hasKey(n, "start")}} {
		if !f.set {
			p.add(n.Line, "the window has no %s: add %s:", f.name, f.name)
		}
	}
	switch {
	case endLine != 0 && durLine != 0:
		p.add(durLine, "the window has both end and duration: keep one")
	case endLine == 0 && durLine == 0:
		p.add(n.Line, "the window has no end: add end: (RFC 3339) or duration: (such as 30m)")
	case durLine != 0 && !w.Start.IsZero():
		w.End = w.Start.Add(dur)
	}
	if !w.Start.IsZero() && !w.End.IsZero() {
		line := max(endLine, durLine)
		maxLen := p.rules.MaxOverride
		if maxLen == 0 {
			maxLen = breaker.DefaultMaxOverride
		}
		switch {
		case !w.End.After(w.Start):
			p.add(line, "the window ends (%s) before it starts (%s): fix end:", w.End.Format(time.RFC3339), w.Start.Format(time.RFC3339))
		case w.Duration() > maxLen:
			p.add(line, "the window lasts %s, longer than the context's max-override %s: shorten it, or split it", w.Duration(), maxLen)
		case w.Repeat == RepeatWeekly && w.Duration() >= week:
			p.add(line, "a weekly window must last less than a week (it lasts %s)", w.Duration())
		}
	}
	if w.ID == "" && w.Dependency != "" && !w.Start.IsZero() {
		w.ID = w.Dependency + "@" + w.Start.UTC().Format(time.RFC3339)
	}
	return w, p.found == before
}

// plain refuses the YAML that reads two ways: a key given twice (the
// parser would keep the last, a reviewer may read the first), an anchor or
// an alias (an alias node's value is its anchor's name, not the anchored
// value, and a reviewer must follow it). What is left is one reading.
func (p *parser) plain(n *yaml.Node) bool {
	ok := true
	switch {
	case n.Kind == yaml.AliasNode:
		p.add(n.Line, "the YAML alias *%s: write the value out in full (a levers file has no anchors or aliases)", textsafe.Line(n.Value))
		return false
	case n.Anchor != "":
		p.add(n.Line, "the YAML anchor &%s: remove it (a levers file has no anchors or aliases)", textsafe.Line(n.Anchor))
		return false
	}
	var keys map[string]int
	if n.Kind == yaml.MappingNode {
		keys = map[string]int{}
	}
	for i, c := range n.Content {
		if keys != nil && i%2 == 0 {
			if line, dup := keys[c.Value]; dup {
				p.add(c.Line, "%s is given twice (first at line %d): keep one", textsafe.Quote(c.Value), line)
				ok = false
			}
			keys[c.Value] = c.Line
		}
		ok = p.plain(c) && ok
	}
	return ok
}

func (p *parser) hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// instant reads an RFC 3339 time with its zone.
func (p *parser) instant(v *yaml.Node, field string) time.Time {
	t, err := time.Parse(time.RFC3339, v.Value)
	if err == nil && t.Nanosecond() != 0 {
		// An override's expiry is stored in milliseconds and a request
		// names its window in seconds: a finer end never matched its
		// override, and every round rewrote it.
		p.add(v.Line, "%s %s has a fraction of a second: a window starts and ends on whole seconds", field, textsafe.Quote(v.Value))
		return time.Time{}
	}
	if err == nil {
		return t.UTC()
	}
	if _, e := time.Parse("2006-01-02T15:04:05", v.Value); e == nil {
		p.add(v.Line, "%s %s has no time zone: write %sZ (UTC) or an offset such as %s+01:00", field, textsafe.Quote(v.Value), v.Value, v.Value)
	} else {
		p.add(v.Line, "%s %s: want an RFC 3339 time such as 2026-12-05T02:00:00Z", field, textsafe.Quote(v.Value))
	}
	return time.Time{}
}

// overlaps refuses two windows of one dependency that can be in force at
// the same time (their occurrences intersect), and two with one id.
func (p *parser) overlaps(ws []Window) {
	ids := map[string]int{}
	for i, a := range ws {
		if line, dup := ids[a.ID]; dup {
			p.add(a.Line, "window id %s is used twice (line %d): give each window its own id:", textsafe.Quote(a.ID), line)
		}
		ids[a.ID] = a.Line
		for _, b := range ws[:i] {
			if a.Dependency == b.Dependency && intersect(a, b) {
				p.add(a.Line, "this window of %s overlaps the one at line %d: one override per dependency at a time; merge them or move one",
					a.Dependency, b.Line)
			}
		}
	}
}

// intersect reports whether an occurrence of a and one of b overlap.
func intersect(a, b Window) bool {
	if b.Repeat == RepeatWeekly && a.Repeat != RepeatWeekly {
		a, b = b, a
	}
	if a.Repeat != RepeatWeekly { // both one-off
		return a.Start.Before(b.End) && b.Start.Before(a.End)
	}
	// a weekly: the occurrence of a that ends after b starts.
	if b.Repeat != RepeatWeekly {
		s, e, ok := a.Next(b.Start)
		return ok && s.Before(b.End) && b.Start.Before(e)
	}
	// Both weekly: compare their offsets in the week, on a circle.
	off := func(w Window) time.Duration {
		return time.Duration((w.Start.Unix()%weekSeconds+weekSeconds)%weekSeconds) * time.Second
	}
	d := (off(b) - off(a) + week) % week // b's start after a's, in the week
	return d < a.Duration() || week-d < b.Duration()
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for _, c := range s {
		if !nameRune(c) {
			return false
		}
	}
	return true
}

// nameRune reports whether c may be in a file's or a window's name.
func nameRune(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
}

// baseName is a path's base name without its extension, lowercased, made
// of the characters a name may hold.
func baseName(path string) string {
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	var b strings.Builder
	for _, c := range strings.ToLower(base) {
		if nameRune(c) {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 || b.Len() > 63 {
		return "levers"
	}
	return b.String()
}

// yamlLine is the line a YAML error names, 1 when it names none.
func yamlLine(err error) int {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return 1
	}
	var line int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); e == nil {
		return line
	}
	return 1
}
