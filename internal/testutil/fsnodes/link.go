package fsnodes

import (
	"os"
	"path/filepath"
	"testing"
)

// Victim is what the file behind a planted link holds: a test that writes
// to the link checks it still does.
const Victim = "keep me\n"

// Link plants dir/name, a symbolic link to dir/victim, a regular file
// holding [Victim], as someone sharing the directory could; it returns both
// paths.
func Link(t testing.TB, dir, name string) (link, victim string) {
	t.Helper()
	victim = filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte(Victim), 0o600); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, name)
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	return link, victim
}
