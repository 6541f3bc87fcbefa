package fsutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// Cause is err without the operation and path an [fs.PathError] adds: what
// went wrong, for a message that names the file itself.
func Cause(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ErrNotRegular matches the error of opening a path that is not a regular
// file (a named pipe, a device, a socket, a directory).
var ErrNotRegular = exitcode.New(exitcode.Usage, "not a regular file")

// ErrTooLarge matches the error of a file larger than the caller's cap.
var ErrTooLarge = exitcode.New(exitcode.Usage, "file too large")

// NotRegularError is a path that is not a regular file. It matches
// [ErrNotRegular].
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

// Error names the kind of file found and the fix.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file: give the path of a regular file (a pipe or device could block forever)",
		e.Path, kind(e.Mode))
}

// Is makes NotRegularError match ErrNotRegular.
func (e *NotRegularError) Is(target error) bool { return errors.Is(ErrNotRegular, target) }

func kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	case t&fs.ModeDir != 0:
		return "directory"
	default:
		return "special file (" + t.String() + ")"
	}
}

// OpenRegular opens path for reading without blocking (O_NONBLOCK where the
// system has it, so opening a FIFO with no writer returns at once), then
// checks the open descriptor and refuses anything but a regular file with a
// [*NotRegularError]. The returned info describes the file opened (after
// symbolic links). A missing file's error matches fs.ErrNotExist.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlock, 0) //nolint:gosec // G304: callers open files the operator names
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, st, nil
}

// ReadRegular reads the whole of the regular file at path, refusing (as
// [OpenRegular] does) anything else, and refusing with an error matching
// [ErrTooLarge] a file longer than limit bytes.
func ReadRegular(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, st, err := OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		clear(b)
		return nil, nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, limit)
	}
	return b, st, nil
}
