package root_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/factory/base"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// The front (a factory with HandOff, without the full program's groups,
// the embedded store and jq) hands the full program every invocation it
// does not link, with its arguments as given, before any command's own
// code: a group it lacks, the whole tree, --jq, and any command but
// version, config and iam on a local context. Everything else it runs.
func TestTheFrontHandsOverWhatItDoesNotLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("current-context: dev\ncontexts:\n  dev:\n    store:\n      dynamodb: {table: t, region: eu-west-1, endpoint-url: \"http://127.0.0.1:1\", static-credentials: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := func() []string {
		return []string{"KOSHACTL_CONFIG=" + cfg, "KOSHACTL_STATE_DIR=" + filepath.Join(dir, "state")}
	}
	for _, tc := range []struct {
		args []string
		// handed says whether the run is handed over; code is the exit
		// code of a run the front keeps.
		handed bool
		code   int
	}{
		{args: []string{"version"}},
		{args: []string{"--context", "local", "version"}},
		{args: []string{"--context", "local", "config", "get-contexts"}},
		{args: []string{"audit", "list", "--since", "-1h"}, code: 2},
		{args: []string{"--context", "dev", "audit", "list", "--since", "-1h"}, code: 2},
		{args: []string{"--context", "local", "audit", "list", "--since", "-1h"}, handed: true},
		{args: []string{"--context=local", "breaker", "list"}, handed: true},
		{args: []string{"breaker", "list", "--context", "local"}, handed: true},
		{args: []string{"audit", "list", "--since", "-1h", "--jq", ".items"}, handed: true},
		{args: []string{"mcp"}, handed: true},
		{args: []string{"dashboard", "--help"}, handed: true},
		{args: []string{"sandbox"}, handed: true},
		{args: []string{"--help"}, handed: true},
		{args: []string{"completion", "bash"}, handed: true},
		{args: []string{"breakr", "list"}, handed: true},
	} {
		ios, _, _, _ := iostreams.Test()
		f := base.NewWith(ios, clocktest.NewFake(clock.Real{}.Now()), base.WithEnviron(environ))
		var handed []string
		f.HandOff = func(args []string) error { handed = args; return nil }
		code := root.Run(context.Background(), f, tc.args)
		if tc.handed != (handed != nil) || (handed != nil && !slices.Equal(handed, tc.args)) {
			t.Errorf("koshactl %s: handed over %q, want handed %v", strings.Join(tc.args, " "), handed, tc.handed)
		}
		if !tc.handed && code != tc.code {
			t.Errorf("koshactl %s: exit %d, want %d", strings.Join(tc.args, " "), code, tc.code)
		}
	}
}

// A front that cannot start the full program says why and what to install,
// in one line, and exits 5.
func TestTheFrontWithoutTheFullProgram(t *testing.T) {
	t.Parallel()
	ios, _, _, errOut := iostreams.Test()
	f := base.NewWith(ios, clocktest.NewFake(clock.Real{}.Now()))
	f.HandOff = func([]string) error {
		return errors.New("koshactl mcp needs koshactl-full: it is not installed beside koshactl: install both programs")
	}
	if code := root.Run(context.Background(), f, []string{"mcp"}); code != 5 {
		t.Errorf("exit %d, want 5", code)
	}
	if got := errOut.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "install both programs") {
		t.Errorf("stderr %q, want one line saying what to install", got)
	}
}
