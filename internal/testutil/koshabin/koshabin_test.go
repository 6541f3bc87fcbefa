package koshabin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
)

// A KOSHACTL_TEST_BINARY that is not an executable file is refused with the
// fix, never run; unset, the caller builds its own. Not parallel: t.Setenv.
func TestFromEnv(t *testing.T) {
	dir, alone := t.TempDir(), t.TempDir()
	exe := filepath.Join(dir, "koshactl")
	plain := filepath.Join(dir, "notes.txt")
	lone := filepath.Join(alone, "koshactl")
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{exe, 0o755}, {filepath.Join(dir, koshabin.Full), 0o755}, {plain, 0o644}, {lone, 0o755}} {
		if err := os.WriteFile(f.path, []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, value string
		set         bool
		wantErr     string
	}{
		{name: "unset", value: ""},
		{name: "an executable", value: exe, set: true},
		{name: "missing", value: filepath.Join(dir, "gone"), set: true, wantErr: "no such file"},
		{name: "a directory", value: dir, set: true, wantErr: "is not an executable file"},
		{name: "not executable", value: plain, set: true, wantErr: "is not an executable file"},
		{name: "without the full program beside it", value: lone, set: true, wantErr: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(koshabin.Env, tc.value)
			bin, set, err := koshabin.FromEnv()
			if set != tc.set {
				t.Fatalf("set = %v, want %v", set, tc.set)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("FromEnv: %v", err)
			case tc.wantErr == "" && bin != tc.value:
				t.Fatalf("bin = %q, want %q", bin, tc.value)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "run make test")):
				t.Fatalf("FromEnv = %q, %v; want an error with %q and the fix", bin, err, tc.wantErr)
			}
		})
	}
}
