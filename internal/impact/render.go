package impact

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Render prints r for a terminal: a title, a table of the tools (behaviour,
// what a client sees, calls a minute, the estimate), then one line per
// dependency and where the rates came from. Every value goes through the
// one rule for untrusted text (cmdutil's table, textsafe.Line).
func (r Report) Render(w io.Writer) error {
	line := func(format string, args ...any) {
		_, _ = io.WriteString(w, textsafe.Line(fmt.Sprintf(format, args...))+"\n")
	}
	line("%s (the degradation matrix, LLD §8):", r.title())
	if len(r.Tools) == 0 {
		line("  no tool changes behaviour")
	} else {
		t := cmdutil.NewTable(w)
		t.Row("  TOOL", "BEHAVIOUR", "CLIENT SEES", "CALLS/MIN", "ESTIMATE")
		for _, ti := range r.Tools {
			est := "-"
			if ti.Estimate != nil {
				est = ti.Estimate.Text
			}
			t.Row("  "+ti.Tool, string(ti.Behaviour), ti.Signal.Text, rateText(ti.CallsPerMinute), est)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	for _, d := range r.Dependencies {
		line("  %s", d.line())
	}
	if s := r.ratesLine(); s != "" {
		line("  %s", s)
	}
	return nil
}

// Lines says r in short lines for a prompt, a notification, a plan or the
// dashboard's detail: one per tool, then each dependency whose override
// nothing obeys or that changes something beyond the tools, then where
// the rates came from. The text is not escaped: the caller's sink does
// that (textsafe.Line, the dashboard's safe).
func (r Report) Lines() []string {
	var out []string
	if r.Clear {
		out = append(out, "until this clear, the override did:")
	}
	if len(r.Tools) == 0 {
		out = append(out, "no tool changes behaviour")
	}
	for _, t := range r.Tools {
		s := t.Tool + " " + string(t.Behaviour)
		if t.Detail != "" {
			s += ": " + t.Detail
		}
		s += " · client sees " + t.Signal.Text
		if t.CallsPerMinute != nil {
			s += " · " + rateText(t.CallsPerMinute) + "/min"
		}
		if t.Estimate != nil {
			s += " · " + t.Estimate.Text
		}
		out = append(out, s)
	}
	for _, d := range r.Dependencies {
		if !d.Obeyed || d.Platform != "" {
			out = append(out, d.line())
		}
	}
	if s := r.ratesLine(); s != "" {
		out = append(out, s)
	}
	return out
}

// line is one dependency: its note, what changes beyond the tools, its
// call rate and, for an override nothing obeys, what its being down does.
func (d Dependency) line() string {
	s := d.Dependency + ": " + d.Note
	if d.Platform != "" {
		s += "; " + d.Platform + " (" + d.PlatformSignal + ")"
	}
	if d.CallsPerMinute != nil {
		s += " · " + rateText(d.CallsPerMinute) + " calls/min"
	}
	var down []string
	for _, e := range d.WhenDown {
		down = append(down, e.Tool+" "+string(e.Behaviour))
	}
	if len(down) > 0 {
		s += " [when " + d.Dependency + " itself is down: " + strings.Join(down, ", ") + "]"
	}
	return s
}

// ratesLine says where the rates came from, or why there are none ("" when
// no source was asked).
func (r Report) ratesLine() string {
	switch {
	case r.Rates == nil:
		return ""
	case r.Rates.Error != "":
		return "call rates: not read from " + r.Rates.Source + ": " + r.Rates.Error + " (the impact above is the matrix's alone)"
	}
	s := "call rates: " + r.Rates.Source
	if r.Rates.Method != "" {
		s += ", " + r.Rates.Method
	}
	for _, w := range r.Rates.Warnings {
		s += "; warning: " + w
	}
	return s
}

// title says what the report is the impact of: "impact of forcing
// screening-sim for 30m", "impact of clearing openai (what its override
// did until now)".
func (r Report) title() string {
	if r.Clear {
		return "impact of clearing " + strings.Join(r.names(), ", ") + " (what the override did until now)"
	}
	return "impact of forcing " + strings.Join(r.names(), ", ") + " " + r.span()
}

func (r Report) names() []string {
	out := make([]string, len(r.Dependencies))
	for i, d := range r.Dependencies {
		out[i] = d.Dependency
	}
	return out
}

// span says how long the overrides hold.
func (r Report) span() string {
	if r.ForSeconds <= 0 {
		return "until cleared"
	}
	return "for " + human.Duration(time.Duration(r.ForSeconds*float64(time.Second)))
}

// rateText is [PerMinute] of v, "-" for none.
func rateText(v *float64) string {
	if v == nil {
		return "-"
	}
	return PerMinute(*v)
}

// PerMinute writes a rate of calls a minute as every surface shows one: to
// one decimal, without trailing zeros ("25", "0.4").
func PerMinute(v float64) string {
	x := math.Round(v*10) / 10
	if x == 0 {
		x = 0 // not -0
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}
