package breaker_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Two koshactl processes race on one dependency for 20 rounds, each
// forcing it open (without --overwrite), then each clearing it: every
// round exactly one force wins (the other exits 4, conflict), and the
// audit trail holds exactly one record for each change that landed.
func TestTwoProcessesRacingOneDependency(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	dir := t.TempDir()
	bin := koshabin.Path(t)
	base := append(os.Environ(), "KOSHACTL_CONFIG="+filepath.Join(dir, "config.yaml"), "KOSHACTL_STATE_DIR="+filepath.Join(dir, "state"),
		"KOSHACTL_CONTEXT=", "NO_COLOR=1")
	run := func(actor string, args ...string) (int, string) {
		cmd := exec.CommandContext(t.Context(), bin, args...) //nolint:gosec // G204: the binary this test built
		cmd.Env = append(slices.Clone(base), "KOSHACTL_ACTOR="+actor)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return ee.ExitCode(), out.String()
		case err != nil:
			t.Fatalf("koshactl %v: %v", args, err)
		}
		return 0, out.String()
	}
	must := func(args ...string) string {
		code, out := run("setup", args...)
		if code != 0 {
			t.Fatalf("koshactl %v: exit %d\n%s", args, code, out)
		}
		return out
	}
	must("config", "set-context", "race", "--table", "kosha-control", "--region", moto.Region,
		"--endpoint-url", endpoint, "--static-credentials", "--dependencies", "openai", "--use")
	must("store", "init")
	race := func(args ...string) [2]int {
		var codes [2]int
		var outs [2]string
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { codes[i], outs[i] = run(fmt.Sprintf("op%d", i), args...) })
		}
		wg.Wait()
		for i, c := range codes {
			if c != exitcode.OK && c != exitcode.Conflict {
				t.Fatalf("koshactl %v (op%d): exit %d, want 0 or 4\n%s", args, i, c, outs[i])
			}
		}
		return codes
	}
	const rounds = 20
	for round := range rounds {
		codes := race("breaker", "force-open", "openai", "--reason", fmt.Sprintf("round %d", round), "--for", "1h")
		if (codes[0] == 0) == (codes[1] == 0) {
			t.Fatalf("round %d: force-open exits %v, want exactly one winner", round, codes)
		}
		codes = race("breaker", "clear", "openai", "--reason", "done")
		if codes[0] != 0 && codes[1] != 0 {
			t.Fatalf("round %d: clear exits %v, want at least one to clear", round, codes)
		}
	}
	var listing struct {
		Records []struct {
			Action string `json:"action"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(must("audit", "list", "--scan", "--subject", "breaker#openai", "-o", "json")), &listing); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range listing.Records {
		counts[r.Action]++
	}
	if counts["breaker.force-open"] != rounds || counts["breaker.clear"] != rounds || len(listing.Records) != 2*rounds {
		t.Errorf("records %v (%d in all), want %d forces and %d clears, one per change", counts, len(listing.Records), rounds, rounds)
	}
}
