package keys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// maxKeyFileSize bounds what a key file read will accept; a base64 key of
// chaos.MaxKeySize bytes with line breaks fits comfortably.
const maxKeyFileSize = 4096

// File is a key read from a file holding standard base64 of the key (the
// format of `head -c 32 /dev/urandom | base64`). The file must be a regular
// file readable by its owner only (mode 0600 or 0400): a key anyone on the
// machine can read is not a secret. It is read on every call, so replacing
// the file takes effect at once. It holds one key and does not rotate.
type File struct {
	path string
}

var (
	_ Source        = (*File)(nil)
	_ chaos.Keyring = (*File)(nil)
)

// NewFile returns the key file source for path (the --key-file flag).
func NewFile(path string) *File { return &File{path: path} }

// Current reads the key.
func (f *File) Current(context.Context) (chaos.Key, error) { return readKeyFile(f.path) }

// ByKID reads the key and returns it if its id is kid.
func (f *File) ByKID(ctx context.Context, kid string) (chaos.Key, error) {
	return keysByKID(ctx, f, kid)
}

// Keys returns the file's key as the current key.
func (f *File) Keys(ctx context.Context) ([]Staged, error) { return oneKey(ctx, f) }

// Describe returns "key file PATH".
func (f *File) Describe() string { return "key file " + f.path }

// InsecureFileError is a key file with group or other permission bits
// set. It matches ErrInsecureFile.
type InsecureFileError struct {
	Path string
	Mode fs.FileMode
}

// Error names the mode and the fix.
func (e *InsecureFileError) Error() string {
	return fmt.Sprintf("chaos key file %s has mode %04o; a key must be readable by its owner only: chmod 600 %s", e.Path, e.Mode.Perm(), e.Path)
}

// Is makes InsecureFileError match ErrInsecureFile.
func (e *InsecureFileError) Is(target error) bool { return errors.Is(ErrInsecureFile, target) }

// readKeyFile reads path without blocking ([fsutil.ReadRegular]: a named
// pipe or a device is refused before anything is read from it, so a
// --key-file pointing at a FIFO fails at once instead of waiting forever
// for a writer), checks that what it read is a regular owner-only file (on
// the descriptor it read, so the check and the read concern the same
// file), and decodes its key. Errors name the path, never the content.
func readKeyFile(path string) (chaos.Key, error) {
	b, st, err := fsutil.ReadRegular(path, maxKeyFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return chaos.Key{}, fmt.Errorf("read chaos key file %s: %w: %w", path, ErrNoKey, fs.ErrNotExist)
	case errors.Is(err, fsutil.ErrTooLarge):
		return chaos.Key{}, fmt.Errorf("read chaos key file %s: larger than %d bytes; it should hold one base64 key", path, maxKeyFileSize)
	case err != nil:
		return chaos.Key{}, fmt.Errorf("read chaos key file: %w", err)
	}
	defer clear(b)
	// Windows reports synthetic permission bits that say nothing about who
	// can read the file, so the check only applies where they are real.
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return chaos.Key{}, &InsecureFileError{Path: path, Mode: st.Mode()}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return chaos.Key{}, fmt.Errorf("read chaos key file %s: %w: the file is empty", path, ErrNoKey)
	}
	k, err := chaos.DecodeKey(string(b))
	if err != nil {
		return chaos.Key{}, fmt.Errorf("read chaos key file %s: %w", path, err)
	}
	return k, nil
}
