//go:build linux

package drill_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
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
			link, victim := fsnodes.Link(t, t.TempDir(), "link")
			r := e.MustRun(exitcode.Usage, "drill", "run", file, flag, link)
			if !strings.Contains(r.Stderr, link+" is a symbolic link") || !strings.Contains(r.Stderr, "nothing was run") {
				t.Errorf("stderr = %s", r.Stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("the drill ran")
			}
			if readFile(t, victim) != fsnodes.Victim || kindOf(t, link)&os.ModeSymlink == 0 {
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
	link, victim := fsnodes.Link(t, t.TempDir(), "link")
	journal := filepath.Join(t.TempDir(), "j.json")
	if err := os.WriteFile(journal, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.MustRun(exitcode.Usage, "drill", "recover", journal, "--junit", link)
	if !strings.Contains(r.Stderr, link+" is a symbolic link") || readFile(t, victim) != fsnodes.Victim {
		t.Errorf("stderr = %s", r.Stderr)
	}
}

// stalledPipe makes a pipe in dir whose reader opens it and never reads,
// with the smallest buffer the kernel allows, so a report larger than a
// page fills it and the writer waits. The reader is closed when the test
// ends (which also ends a write the command failed to give up).
func stalledPipe(t *testing.T, dir string) string {
	t.Helper()
	fifo := fsnodes.FIFO(t, dir, "pipe")
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, r.Fd(), fSetPipeSz, 4096); errno != 0 {
		t.Fatalf("F_SETPIPE_SZ: %v", errno)
	}
	return fifo
}

// Issue 21 (probe): a report written to a pipe whose reader stalls, after the
// run ended, waited for the reader whatever the signals: the JUnit write held
// the runner's lock, so the signal watcher's notice blocked behind it and the
// third signal was never read; the --report write came after the watcher had
// stopped. A signal once the run has ended now gives up the write at once.
func TestRunReportToAStalledPipeEndsOnASignal(t *testing.T) {
	var steps strings.Builder
	for i := range 60 {
		fmt.Fprintf(&steps, "  - id: step-%02d-with-a-long-name-so-the-report-outgrows-a-page\n    sleep: 1ms\n", i)
	}
	file := writeFile(t, "big.yaml", "name: big\ntimeout: 1m\nsteps:\n"+steps.String())
	for _, flag := range []string{"--junit", "--report"} {
		t.Run(flag, func(t *testing.T) {
			clitest.New(t)
			ios, _, _, errOut := iostreams.Test()
			f := factory.NewWith(ios, nil)
			f.Clock = clockReal{}
			fifo := stalledPipe(t, t.TempDir())
			jpath := filepath.Join(t.TempDir(), "j.json")
			opts := &run.Options{File: file, Signals: nil, Journal: jpath, Output: "table"}
			sigs := make(chan os.Signal, 3)
			opts.Signals = sigs
			if flag == "--junit" {
				opts.JUnit = fifo
			} else {
				opts.Report = fifo
			}
			done := make(chan error, 1)
			go func() { done <- run.Run(context.Background(), f, opts) }()
			wait.Until(t, "the journal to say passed", func() bool {
				j, err := tryJournal(jpath)
				return err == nil && j.Outcome == drill.OutcomePassed
			})
			// The run is over and its report is being written into the stalled
			// pipe: an operator's SIGTERM (sent again while it goes unheard)
			// must end the command.
			var err error
			if werr := wait.For(t.Context(), "drill run "+flag+" into a stalled pipe to end on SIGTERM", func() bool {
				select {
				case sigs <- syscall.SIGTERM:
				default:
				}
				select {
				case err = <-done:
					return true
				default:
					return false
				}
			}); werr != nil {
				t.Fatalf("%v\n%s", werr, errOut)
			}
			if err == nil || !strings.Contains(err.Error()+errOut.String(), fifo) {
				t.Errorf("run ended with %v, want the report's write error naming %s\n%s", err, fifo, errOut)
			}
			if k := kindOf(t, fifo); k&os.ModeNamedPipe == 0 {
				t.Errorf("the pipe was replaced: %v", k)
			}
		})
	}
}

// Issue 21 (probe): recover read a journal through a symbolic link, ran its
// rollbacks, and only then refused to write the journal through the link
// (exit 1): the levers were put back but the journal still said pending. A
// journal recover could not write back is refused before anything is done.
func TestRecoverRefusesALinkAsJournalBeforeActing(t *testing.T) {
	e := clitest.New(t)
	jpath, j := realRun(t, e, oneLever)
	killed(t, &j)
	writeJournal(t, jpath, j)
	was := readFile(t, jpath)
	link := filepath.Join(t.TempDir(), "journal.json")
	if err := os.Symlink(jpath, link); err != nil {
		t.Fatal(err)
	}
	st := localStore(t)
	records := auditCount(t, st)
	r := e.Run("drill", "recover", link)
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "symbolic link") || !strings.Contains(r.Stderr, "nothing was done") {
		t.Fatalf("recover through a link: exit %d, want %d refusing the link before acting\n%s%s", r.Code, exitcode.Usage, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stderr, "recovering drill") {
		t.Errorf("recover acted before refusing the link:\n%s", r.Stderr)
	}
	if n := auditCount(t, st); n != records {
		t.Errorf("audit records %d, want %d: recover wrote something", n, records)
	}
	if readFile(t, jpath) != was {
		t.Error("the journal behind the link was rewritten")
	}
	if k := kindOf(t, link); k&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", k)
	}
}
