package main

import (
	"strings"
	"testing"
	"time"
)

// The runs of issue 45, as go test printed them: FuzzParse ran 37 inputs
// and sat at 0/sec; FuzzRender ran 48,492 and sat at 0/sec from 6 s; a run
// that fuzzed steadily; one that never left its baseline.
const (
	stalledParse = `fuzz: elapsed: 0s, gathering baseline coverage: 0/31 completed
fuzz: elapsed: 3s, gathering baseline coverage: 8/31 completed
fuzz: elapsed: 5s, gathering baseline coverage: 31/31 completed, now fuzzing with 2 workers
fuzz: elapsed: 6s, execs: 37 (10/sec), new interesting: 0 (total: 31)
fuzz: elapsed: 9s, execs: 37 (0/sec), new interesting: 0 (total: 31)
fuzz: elapsed: 12s, execs: 37 (0/sec), new interesting: 0 (total: 31)
fuzz: elapsed: 15s, execs: 37 (0/sec), new interesting: 0 (total: 31)
fuzz: elapsed: 18s, execs: 37 (0/sec), new interesting: 0 (total: 31)
fuzz: elapsed: 21s, execs: 37 (0/sec), new interesting: 0 (total: 31)
fuzz: elapsed: 22s, execs: 37 (0/sec), new interesting: 0 (total: 31)
PASS
ok  	github.com/kosha-platform/koshactl/internal/drill/runner	21.854s
`
	stalledRender = `fuzz: elapsed: 0s, gathering baseline coverage: 0/20 completed
fuzz: elapsed: 0s, gathering baseline coverage: 20/20 completed, now fuzzing with 2 workers
fuzz: elapsed: 3s, execs: 20112 (6703/sec), new interesting: 30 (total: 50)
fuzz: elapsed: 6s, execs: 48492 (4820/sec), new interesting: 45 (total: 65)
fuzz: elapsed: 9s, execs: 48492 (0/sec), new interesting: 45 (total: 65)
fuzz: elapsed: 12s, execs: 48492 (0/sec), new interesting: 45 (total: 65)
fuzz: elapsed: 15s, execs: 48492 (0/sec), new interesting: 45 (total: 65)
fuzz: elapsed: 18s, execs: 48492 (0/sec), new interesting: 45 (total: 65)
fuzz: elapsed: 21s, execs: 48492 (0/sec), new interesting: 45 (total: 65)
fuzz: elapsed: 21s, execs: 48492 (0/sec), new interesting: 45 (total: 65)
PASS
`
	steady = `fuzz: elapsed: 0s, gathering baseline coverage: 0/188 completed
fuzz: elapsed: 1s, gathering baseline coverage: 188/188 completed, now fuzzing with 2 workers
fuzz: elapsed: 3s, execs: 50000 (16000/sec), new interesting: 4 (total: 192)
fuzz: elapsed: 6s, execs: 107814 (14942/sec), new interesting: 5 (total: 187)
fuzz: elapsed: 9s, execs: 107814 (0/sec), new interesting: 6 (total: 188)
fuzz: elapsed: 12s, execs: 243716 (25057/sec), new interesting: 6 (total: 188)
fuzz: elapsed: 20s, execs: 400580 (24252/sec), new interesting: 6 (total: 188)
fuzz: elapsed: 20s, execs: 400580 (0/sec), new interesting: 6 (total: 188)
PASS
`
	noFuzzing = `fuzz: elapsed: 0s, gathering baseline coverage: 0/4000 completed
fuzz: elapsed: 3s, gathering baseline coverage: 900/4000 completed
fuzz: elapsed: 20s, gathering baseline coverage: 3900/4000 completed
PASS
`
)

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name, log  string
		ok         bool
		execs      int64
		stall      time.Duration
		why        string
		printedHas string
	}{
		{"a target stuck after 37 execs", stalledParse, false, 37, 16 * time.Second, "fewer than 500 execs", "DID NOT FUZZ: 37 execs"},
		{"a target stuck from 6s", stalledRender, false, 48492, 15 * time.Second, "0 execs/s for 15s", "longest stall 15s (from 6s)"},
		{"a steady target with one short pause", steady, true, 400580, 3 * time.Second, "", "ok: 400580 execs, 23564/sec"},
		{"a target that never left its baseline", noFuzzing, false, 0, 0, "never got past its baseline", "DID NOT FUZZ: 0 execs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := judge(strings.NewReader(tc.log), 500, 8*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if v.OK != tc.ok || v.Execs != tc.execs || v.Stall != tc.stall {
				t.Errorf("ok %v, execs %d, stall %s; want %v, %d, %s", v.OK, v.Execs, v.Stall, tc.ok, tc.execs, tc.stall)
			}
			if tc.why != "" && !strings.Contains(strings.Join(v.Why, "; "), tc.why) {
				t.Errorf("why %q, want %q", v.Why, tc.why)
			}
			if !strings.Contains(v.String(), tc.printedHas) {
				t.Errorf("printed %q, want %q in it", v.String(), tc.printedHas)
			}
		})
	}
}
