// Package leversview is what `koshactl diff` and `koshactl apply` share: the
// levers file loaded and checked against the context, the comparison with
// the table (and the fleet), and the differences as a document, a table or
// Markdown for a pull request.
package leversview

import (
	"context"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/levers"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Load reads the levers file at path (a regular file: never a FIFO) and
// checks it against env's context: every problem with its line, exit 2.
func Load(env *cmdenv.Env, path string) (*levers.File, error) {
	if path == "" {
		return nil, cmdutil.Usagef("a levers file is required: pass -f FILE (docs/contracts/levers-file.md)")
	}
	data, _, err := fsutil.ReadRegular(path, levers.MaxFileSize)
	if err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("levers file %s: %w", textsafe.Quote(path), err))
	}
	return levers.Parse(path, data, levers.Rules{Context: env.Name, Known: env.Context.KnownDependencies(),
		MaxOverride: env.Context.MaxOverrideDuration()})
}

// OverridesWith reads the table's overrides (the known dependencies'
// consistently, the others as the lists index holds them, no scan) and the
// items under extra (apply: the table's policy and its windows' requests)
// in one round trip; the items are returned by key, absent ones left out.
func OverridesWith(ctx context.Context, env *cmdenv.Env, extra []string) ([]breaker.Override, map[string]store.Item, error) {
	ov, err := depargs.Overrides(env)
	if err != nil {
		return nil, nil, err
	}
	return ov.ListForWith(ctx, env.Context.KnownDependencies(), extra)
}

// Records reads env's audit records, for the overrides apply's own records
// say it wrote (levers.File.Written).
func Records(f *cmdenv.Factory, env *cmdenv.Env) *audit.Log {
	log := audit.NewLog(env.Store, f.Clock, env.Name)
	log.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	return log
}

// Header opens diff's and apply's documents: which file was compared with
// which context's table, and when.
type Header struct {
	cmdenv.Envelope
	File string `json:"file"`
	Name string `json:"name"`
	At   string `json:"at"`
}

// NewHeader is the header of a document of kind about file (given as path)
// on env at now.
func NewHeader(kind string, env *cmdenv.Env, path string, file *levers.File, now time.Time) Header {
	return Header{Envelope: env.Envelope(kind), File: path, Name: file.Name, At: *cmdutil.TimeOrNil(now)}
}

// Difference is one difference as documents show it.
type Difference struct {
	Kind       string                     `json:"kind"`
	Dependency string                     `json:"dependency"`
	Window     string                     `json:"window,omitempty"`
	Line       int                        `json:"line,omitempty"`
	Start      *string                    `json:"start,omitempty"`
	End        *string                    `json:"end,omitempty"`
	Action     string                     `json:"action"`
	Detail     string                     `json:"detail"`
	Override   *overrideview.OverrideView `json:"override,omitempty"`
}

// Window is one window of the file as documents show it: whether it is in
// force, and its current or next occurrence.
type Window struct {
	ID         string  `json:"id"`
	Dependency string  `json:"dependency"`
	Reason     string  `json:"reason"`
	Line       int     `json:"line"`
	Repeat     string  `json:"repeat,omitempty"`
	InForce    bool    `json:"in_force"`
	Start      *string `json:"start"`
	End        *string `json:"end"`
}

// Differences turns the domain's differences into their documents.
func Differences(ds []levers.Difference, now time.Time) []Difference {
	out := make([]Difference, 0, len(ds))
	for _, d := range ds {
		v := Difference{Kind: d.Kind, Dependency: d.Dependency, Action: d.Action, Detail: d.Detail, Override: overrideview.ViewPtr(d.Override, now)}
		if w := d.Window; w != nil {
			v.Window, v.Line = w.ID, w.Line
			v.Start, v.End = cmdutil.TimeOrNil(d.Start), cmdutil.TimeOrNil(d.End)
		}
		out = append(out, v)
	}
	return out
}

// Windows lists f's windows at now: each one's occurrence in force or next.
func Windows(f *levers.File, now time.Time) []Window {
	out := make([]Window, 0, len(f.Windows))
	for _, w := range f.Windows {
		v := Window{ID: w.ID, Dependency: w.Dependency, Reason: w.Reason, Line: w.Line, Repeat: w.Repeat}
		start, end, ok := w.Next(now)
		if ok {
			v.Start, v.End = cmdutil.TimeOrNil(start), cmdutil.TimeOrNil(end)
			v.InForce = !now.Before(start)
		}
		out = append(out, v)
	}
	return out
}

// WindowLines says, one line each, which of f's windows are in force at now
// and which open next, soonest first (windows over are left out): what the
// dashboard shows beside the overrides.
func WindowLines(f *levers.File, now time.Time) []string {
	ws := slices.DeleteFunc(Windows(f, now), func(w Window) bool { return w.Start == nil })
	slices.SortStableFunc(ws, func(a, b Window) int { return strings.Compare(*a.Start, *b.Start) })
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%s %s: %s (%s)", w.Dependency, when(w), w.Reason, w.ID))
	}
	return out
}

// PrintTable writes the differences for a terminal, one per line, then
// the windows: every value through the textsafe rule.
func PrintTable(ios *iostreams.IOStreams, ds []Difference, ws []Window) error {
	w := ios.Out
	if len(ds) == 0 {
		fmt.Fprintln(w, "In sync: the table and the fleet are as the file plans.")
	} else {
		tw := cmdutil.NewTable(w)
		tw.Header(ios, "DEPENDENCY", "DIFFERENCE", "APPLY", "DETAIL")
		for _, d := range ds {
			tw.Row(d.Dependency, d.Kind, d.Action, d.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(ws) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := cmdutil.NewTable(w)
	tw.Header(ios, "WINDOW", "DEPENDENCY", "WHEN", "REASON")
	for _, v := range ws {
		tw.Row(v.ID, v.Dependency, when(v), v.Reason)
	}
	return tw.Flush()
}

func when(v Window) string {
	switch {
	case v.Start == nil:
		return "over"
	case v.InForce:
		return "in force until " + *v.End
	}
	s := *v.Start + " to " + *v.End
	if v.Repeat != "" {
		s += " (" + v.Repeat + ")"
	}
	return s
}

// PrintMarkdown writes the differences as a pull request comment: a
// heading that says whether the table is in sync, a table of differences,
// and the windows. Every value goes through [textsafe.Markdown].
func PrintMarkdown(w io.Writer, contextName, file string, ds []Difference, ws []Window) error {
	md := textsafe.Markdown
	var b strings.Builder
	if len(ds) == 0 {
		fmt.Fprintf(&b, "### ✅ levers %s: in sync on %s\n\n", md(file), md(contextName))
	} else {
		fmt.Fprintf(&b, "### ⚠️ levers %s: %s on %s\n\n| dependency | difference | apply | detail |\n|---|---|---|---|\n",
			md(file), human.Count(int64(len(ds)), "difference"), md(contextName))
		for _, d := range ds {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", md(d.Dependency), md(d.Kind), md(d.Action), md(d.Detail))
		}
		b.WriteString("\n")
	}
	if len(ws) > 0 {
		b.WriteString("| window | dependency | when | reason |\n|---|---|---|---|\n")
		for _, v := range ws {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", md(v.ID), md(v.Dependency), md(when(v)), md(v.Reason))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
