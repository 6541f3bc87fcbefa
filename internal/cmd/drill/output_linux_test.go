//go:build linux

package drill_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/fsnodes"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// Every output path of drill run and recover, tried as each kind of file,
// each made in the test's own directory (never the machine's /dev).

const tinyDrill = "name: tiny\ntimeout: 1m\nsteps:\n  - shell: \"true\"\n"

func kindOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Type()
}

func linkTo(t *testing.T, dir string) (link, victim string) {
	t.Helper()
	victim = filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	return link, victim
}

func TestRunJUnitToACharacterDeviceWritesInPlace(t *testing.T) {
	e := clitest.New(t)
	file := writeFile(t, "tiny.yaml", tinyDrill)
	dev := fsnodes.Null(t, t.TempDir())
	e.MustRun(exitcode.OK, "drill", "run", file, "--junit", dev)
	// The old code renamed a new file over it: a device became a regular file.
	if k := kindOf(t, dev); k&os.ModeCharDevice == 0 {
		t.Errorf("the device was replaced: %v", k)
	}
}

func TestRunJUnitToAPipeWritesInPlace(t *testing.T) {
	e := clitest.New(t)
	file := writeFile(t, "tiny.yaml", tinyDrill)
	fifo := fsnodes.FIFO(t, t.TempDir(), "pipe")
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A writer of the test's own, so the reader waits for data instead of
	// reading EOF before the drill writes.
	w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "</testsuites>") {
				break
			}
		}
		got <- b.String()
	}()
	e.MustRun(exitcode.OK, "drill", "run", file, "--junit", fifo)
	select {
	case s := <-got:
		if !strings.Contains(s, "<testsuites") {
			t.Errorf("the pipe's reader got %q", s)
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("the pipe's reader got no report")
	}
	if k := kindOf(t, fifo); k&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v", k)
	}
}

func TestRunJUnitToAPipeWithoutReaderSaysSo(t *testing.T) {
	e := clitest.New(t)
	file := writeFile(t, "tiny.yaml", tinyDrill)
	fifo := fsnodes.FIFO(t, t.TempDir(), "pipe")
	r := e.Run("drill", "run", file, "--junit", fifo)
	if r.Code == exitcode.OK || !strings.Contains(r.Stderr, "no process is reading") {
		t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	if k := kindOf(t, fifo); k&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v", k)
	}
}

func TestRunRefusesALinkAsReportBeforeRunning(t *testing.T) {
	for _, flag := range []string{"--junit", "--journal"} {
		t.Run(flag, func(t *testing.T) {
			e := clitest.New(t)
			out := filepath.Join(t.TempDir(), "ran")
			file := writeFile(t, "r.yaml", "name: r\ntimeout: 1m\nsteps:\n  - shell: touch "+out+"\n")
			link, victim := linkTo(t, t.TempDir())
			r := e.MustRun(exitcode.Usage, "drill", "run", file, flag, link)
			if !strings.Contains(r.Stderr, link+" is a symbolic link") || !strings.Contains(r.Stderr, "nothing was run") {
				t.Errorf("stderr = %s", r.Stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("the drill ran")
			}
			if readFile(t, victim) != "keep me\n" || kindOf(t, link)&os.ModeSymlink == 0 {
				t.Error("the link or its target changed")
			}
		})
	}
}

func TestRunRefusesAPipeOrDeviceAsJournal(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{fsnodes.FIFO(t, dir, "pipe"), fsnodes.Null(t, dir)} {
		e := clitest.New(t)
		file := writeFile(t, "tiny.yaml", tinyDrill)
		before := kindOf(t, p)
		r := e.MustRun(exitcode.Usage, "drill", "run", file, "--journal", p)
		if !strings.Contains(r.Stderr, "it must be a regular file") || !strings.Contains(r.Stderr, "nothing was run") {
			t.Errorf("stderr = %s", r.Stderr)
		}
		if kindOf(t, p) != before {
			t.Errorf("%s was replaced", p)
		}
	}
}

func TestRunJournalLockIsPrivateAndNotFollowed(t *testing.T) {
	e := clitest.New(t)
	file := writeFile(t, "tiny.yaml", tinyDrill)
	dir := t.TempDir()
	journal := filepath.Join(dir, "j.json")
	e.MustRun(exitcode.OK, "drill", "run", file, "--journal", journal)
	fi, err := os.Lstat(journal + ".lock")
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("lock file: %v %v, want a regular file of mode 0600", fi.Mode(), err)
	}
	// A link planted as the lock is refused, its target left alone.
	journal2 := filepath.Join(dir, "j2.json")
	victim := filepath.Join(dir, "victim")
	if err := os.Symlink(victim, journal2+".lock"); err != nil {
		t.Fatal(err)
	}
	r := e.MustRun(exitcode.Usage, "drill", "run", file, "--journal", journal2)
	if !strings.Contains(r.Stderr, "is a symbolic link") {
		t.Errorf("stderr = %s", r.Stderr)
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Error("the lock was created through the link")
	}
}

func TestRecoverRefusesAPipeOrDeviceAsJournalAtOnce(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{fsnodes.FIFO(t, dir, "pipe"), fsnodes.Null(t, dir)} {
		e := clitest.New(t)
		ctx, cancel := context.WithTimeout(context.Background(), wait.Ceiling)
		done := make(chan clitest.Result, 1)
		// The old open of a pipe waited in the kernel for a writer, deaf to
		// its context and to signals.
		go func() { done <- e.RunContext(ctx, "drill", "recover", p) }()
		select {
		case r := <-done:
			if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "not a regular file") {
				t.Errorf("%s: exit %d, stderr %q", p, r.Code, r.Stderr)
			}
		case <-time.After(wait.Ceiling + time.Minute):
			t.Fatalf("recover %s did not return", p)
		}
		cancel()
	}
}

func TestRecoverRefusesALinkAsJUnit(t *testing.T) {
	e := clitest.New(t)
	link, victim := linkTo(t, t.TempDir())
	journal := filepath.Join(t.TempDir(), "j.json")
	if err := os.WriteFile(journal, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.MustRun(exitcode.Usage, "drill", "recover", journal, "--junit", link)
	if !strings.Contains(r.Stderr, link+" is a symbolic link") || readFile(t, victim) != "keep me\n" {
		t.Errorf("stderr = %s", r.Stderr)
	}
}
