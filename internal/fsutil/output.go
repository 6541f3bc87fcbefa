package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrOutputRefused matches the error of every path the output policy (see
// the package documentation) refuses to write.
var ErrOutputRefused = errors.New("output path refused")

// ErrNoReader matches the error of writing to a named pipe no process is
// reading. It also matches [ErrOutputRefused].
var ErrNoReader = errors.New("named pipe has no reader")

// OutputError is a path the output policy refuses. It matches
// [ErrOutputRefused] (and [ErrNoReader] for a pipe with no reader).
type OutputError struct {
	Path string
	// Mode is the kind of file found at Path.
	Mode fs.FileMode
	// Fix says what to give instead.
	Fix      string
	noReader bool
}

// Error names the path, the kind of file found and the fix, on one line.
func (e *OutputError) Error() string {
	what := kind(e.Mode)
	if e.noReader {
		what = "named pipe no process is reading"
	}
	return fmt.Sprintf("%s is a %s: %s", e.Path, what, e.Fix)
}

// Is makes OutputError match ErrOutputRefused, and ErrNoReader when the
// pipe had no reader.
func (e *OutputError) Is(target error) bool {
	return target == ErrOutputRefused || (e.noReader && target == ErrNoReader)
}

const (
	fixLink = "koshactl never writes through a link (one planted in a shared directory would redirect the write); give the path of the file itself"
	fixDir  = "give the path of a file, not a directory"
	// fixRegular is the fix where a pipe or device cannot be written in place.
	fixRegular = "it must be a regular file (or absent); give the path of one"
	fixBlock   = "koshactl never writes to a block device; give the path of a regular file"
	fixOther   = "give the path of a regular file, a named pipe or a character device"
	fixReader  = "start the process that reads it first (koshactl does not wait for one)"
)

func isSpecial(m fs.FileMode) bool {
	return m&fs.ModeNamedPipe != 0 || m&fs.ModeCharDevice != 0
}

// refusal returns the policy's error for a file of mode m at path, or nil
// when it may be written: a regular file always, a pipe or character device
// only when special.
func refusal(path string, m fs.FileMode, special bool) error {
	fix := ""
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		fix = fixLink
	case m.IsDir():
		fix = fixDir
	case isSpecial(m):
		if special {
			return nil
		}
		fix = fixRegular
	case m&fs.ModeDevice != 0:
		fix = fixBlock
	default:
		fix = fixOther
		if !special {
			fix = fixRegular
		}
	}
	return &OutputError{Path: path, Mode: m, Fix: fix}
}

// target looks at path without following a link and returns what is there
// (nil when nothing is), or the policy's refusal.
func target(path string, special bool) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := refusal(path, fi.Mode(), special); err != nil {
		return nil, err
	}
	return fi, nil
}

// CheckOutput tells, before a command starts work, whether path could be
// written under the policy: it refuses what the policy refuses (pipes and
// character devices too unless special), and for a path that would be
// replaced checks that its directory accepts a new file. A pipe is not
// opened (opening and closing it would end its reader's input).
func CheckOutput(path string, special bool) error {
	fi, err := target(path, special)
	if err != nil {
		return err
	}
	if fi != nil && isSpecial(fi.Mode()) {
		return nil
	}
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	name := f.Name()
	cerr := f.Close()
	return errors.Join(cerr, os.Remove(name))
}

// WriteFile writes data to path under the policy: an absent path or a
// regular file is replaced atomically by a new file of mode perm; a named
// pipe or character device is written in place, the pipe only if a process
// is reading it, the write ending with ctx; anything else is refused.
func WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	fi, err := target(path, true)
	if err != nil {
		return err
	}
	if fi != nil && isSpecial(fi.Mode()) {
		return writeInPlace(ctx, path, data)
	}
	return replace(ctx, path, data, perm)
}

// ReplaceFile writes data to path as a new file of mode perm, atomically,
// when path is absent or a regular file; it refuses anything else, pipes
// and devices included (for files that are read back, like a journal).
func ReplaceFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if _, err := target(path, false); err != nil {
		return err
	}
	return replace(ctx, path, data, perm)
}

// CreateNew writes data to path as a new file of mode perm, complete
// before it appears, only if nothing is at path: otherwise the error
// matches fs.ErrExist and the existing entry is left as it is. Two
// processes racing on one path: exactly one succeeds.
func CreateNew(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp) }()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	// link(2) never follows or replaces what is at the new name.
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return nil
}

// OpenAppend opens path for appending under the policy: a regular file is
// appended to, an absent one created exclusively with mode perm, a named
// pipe (with a reader) or character device written in place; anything
// else is refused. The open never blocks. Closing the file ends a write
// that waits on a pipe whose reader stopped reading.
func OpenAppend(ctx context.Context, path string, perm fs.FileMode) (*os.File, error) {
	for {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		fi, err := target(path, true)
		if err != nil {
			return nil, err
		}
		flag := os.O_WRONLY | os.O_APPEND
		if fi == nil {
			flag |= os.O_CREATE | os.O_EXCL
		}
		f, err := openChecked(path, flag, perm, true)
		if fi == nil && errors.Is(err, fs.ErrExist) {
			continue // something took the name since the look: look again
		}
		return f, err
	}
}

// OpenOrCreateRegular opens path for reading and writing, creating it with
// mode perm if absent, without following a link and without blocking, and
// refuses anything but a regular file (a lock file, a store file).
func OpenOrCreateRegular(path string, perm fs.FileMode) (*os.File, error) {
	// Looked at first, so a device is refused without being opened.
	if _, err := target(path, false); err != nil {
		return nil, err
	}
	return openChecked(path, os.O_RDWR|os.O_CREATE, perm, false)
}

// openChecked opens path with flag plus no-follow, no-block and no-ctty,
// maps the refusals open(2) reports to the policy's errors, and checks the
// open descriptor's kind.
func openChecked(path string, flag int, perm fs.FileMode, special bool) (*os.File, error) {
	f, err := os.OpenFile(path, flag|openNoFollow|openNonBlock|openNoCTTY, perm) //nolint:gosec // G304: the operator names the file; the policy checks it
	switch {
	case err != nil && isLink(err):
		return nil, &OutputError{Path: path, Mode: fs.ModeSymlink, Fix: fixLink}
	case err != nil && isNoReader(err):
		return nil, &OutputError{Path: path, Mode: fs.ModeNamedPipe, Fix: fixReader, noReader: true}
	case err != nil:
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = refusal(path, st.Mode(), special)
	}
	if err == nil && isSpecial(st.Mode()) {
		err = setBlocking(f)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// noDeadline is the zero deadline: none.
var noDeadline time.Time

// writeInPlace writes data to the pipe or device at path, ending the write
// when ctx ends.
func writeInPlace(ctx context.Context, path string, data []byte) error {
	f, err := openChecked(path, os.O_WRONLY, 0, true)
	if err != nil {
		return err
	}
	// A pipe's write waits in the poller; a deadline in the past ends it.
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Unix(1, 0)) })
	_, werr := f.Write(data)
	if !stop() && werr != nil {
		werr = fmt.Errorf("write %s: %w", path, context.Cause(ctx))
	}
	return errors.Join(werr, f.Close())
}

// replace writes data to a new temporary file beside path and renames it
// over path, which is absent or a regular file when looked at last.
func replace(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp) }() // after the rename there is nothing to remove
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	// Looked at again: the write may have taken long enough for the entry to
	// change.
	if _, err := target(path, false); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeTemp writes data to a new temporary file of mode perm in path's
// directory, synced, and returns its name.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := createTemp(path)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // exactly perm, whatever the umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", errors.Join(err, os.Remove(f.Name()))
	}
	return f.Name(), nil
}

// maxTempBase bounds the part of a temporary file's name taken from the
// target's, so a long name still leaves room for the suffix.
const maxTempBase = 64

// createTemp creates a new file (os.CreateTemp: exclusively, so never
// through a link, mode 0600), named after path in path's directory.
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	if len(base) > maxTempBase {
		base = base[:maxTempBase]
	}
	if dir == "" {
		dir = "." // CreateTemp's "" is the system's temporary directory
	}
	return os.CreateTemp(dir, "."+base+".tmp-*")
}
