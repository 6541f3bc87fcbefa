// Command fuzzgate reads the output of one `go test -fuzz` run on stdin and
// fails when the target did not fuzz: it never got past its baseline, it
// ran fewer than -min-execs inputs, or its reports stood at 0 execs/s for
// -max-stall or longer (the engine counts a worker's inputs only when it
// reports, so a worker stuck on one slow input or one long minimization
// shows as 0/sec). `make fuzz` runs it after each target, so a target that
// does not fuzz fails the gate instead of passing it.
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 20s ./pkg 2>&1 | fuzzgate -min-execs 500 -max-stall 8s
//
// It prints one line: the target's execs, its rate while fuzzing and its
// longest stall, and what failed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	minExecs := flag.Int64("min-execs", 500, "fail when the target ran fewer inputs than this")
	maxStall := flag.Duration("max-stall", 8*time.Second, "fail when the reports stood at 0 execs/s this long or longer")
	flag.Parse()
	v, err := judge(os.Stdin, *minExecs, *maxStall)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzgate:", err)
		os.Exit(2)
	}
	fmt.Println(v)
	if !v.OK {
		os.Exit(1)
	}
}

// progress is one "fuzz: elapsed: 12s, execs: 5784 (497/sec), ..." line.
var progress = regexp.MustCompile(`^fuzz: elapsed: ([0-9hms.]+), execs: ([0-9]+) \(([0-9]+)/sec\)`)

// verdict is what a run showed.
type verdict struct {
	OK bool
	// Fuzzed: the baseline completed and the engine reported fuzzing.
	Fuzzed bool
	Execs  int64
	// Fuzzing is the time from the first report while fuzzing to the last.
	Fuzzing time.Duration
	// Stall is the longest time the reports stood at 0 execs/s, and
	// StallAt when it began.
	Stall, StallAt time.Duration
	Why            []string
}

func (v verdict) String() string {
	rate := "-"
	if v.Fuzzing > 0 {
		rate = strconv.FormatFloat(float64(v.Execs)/v.Fuzzing.Seconds(), 'f', 0, 64) + "/sec"
	}
	s := fmt.Sprintf("%d execs, %s while fuzzing, longest stall %s", v.Execs, rate, v.Stall)
	if v.Stall > 0 {
		s += fmt.Sprintf(" (from %s)", v.StallAt)
	}
	if v.OK {
		return "ok: " + s
	}
	return "DID NOT FUZZ: " + s + ": " + strings.Join(v.Why, "; ")
}

// judge reads a run's output and says whether the target fuzzed.
func judge(r io.Reader, minExecs int64, maxStall time.Duration) (verdict, error) {
	var v verdict
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var first, prev time.Duration
	var stallFrom time.Duration = -1
	seen := false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "now fuzzing with") {
			v.Fuzzed = true
			continue
		}
		m := progress.FindStringSubmatch(line)
		if m == nil || !v.Fuzzed {
			continue
		}
		at, err := time.ParseDuration(m[1])
		if err != nil {
			return v, fmt.Errorf("read elapsed %q: %w", m[1], err)
		}
		v.Execs, _ = strconv.ParseInt(m[2], 10, 64)
		rate, _ := strconv.ParseInt(m[3], 10, 64)
		if !seen {
			first, prev, seen = at, at, true
		}
		if rate == 0 && at > prev {
			if stallFrom < 0 {
				stallFrom = prev
			}
			if d := at - stallFrom; d > v.Stall {
				v.Stall, v.StallAt = d, stallFrom
			}
		} else if rate > 0 {
			stallFrom = -1
		}
		prev = at
	}
	if err := sc.Err(); err != nil {
		return v, err
	}
	v.Fuzzing = prev - first
	switch {
	case !v.Fuzzed:
		v.Why = append(v.Why, "it never got past its baseline (the seed corpus and cache took the whole run)")
	case v.Execs < minExecs:
		v.Why = append(v.Why, fmt.Sprintf("fewer than %d execs", minExecs))
	}
	if v.Stall >= maxStall {
		v.Why = append(v.Why, fmt.Sprintf("0 execs/s for %s (at most %s): an input or a minimization the engine could not finish; "+
			"bound the target's input size or its cost per input", v.Stall, maxStall))
	}
	v.OK = len(v.Why) == 0
	return v, nil
}
