package keys

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// Local file names, inside the directory a Local is given.
const (
	// LocalKeyFile holds the local context's current key.
	LocalKeyFile = "chaos.key"
	// LocalPreviousFile holds the key the last local rotation replaced.
	LocalPreviousFile = "chaos.key.previous"
)

// Local is the local context's key: generated on first use into a file
// under a directory the caller chooses (the context's state directory),
// with the same format and permission rules as [File].
//
// Creation is atomic and race-free: the key is written in full to a private
// temporary file (mode 0600) and then hard-linked to its final name, which
// fails if the name exists ([fsutil.CreateNew]). Two processes racing on first use therefore
// both end up with the one key that won, and no reader ever sees a partly
// written file. An existing key file is never overwritten except by Rotate;
// a broken one is reported, not replaced.
type Local struct {
	dir string
}

var (
	_ Source  = (*Local)(nil)
	_ Rotator = (*Local)(nil)
)

// NewLocal returns the local key source keeping its files in dir (created
// with mode 0700 on first use).
func NewLocal(dir string) *Local { return &Local{dir: dir} }

func (l *Local) current() string  { return filepath.Join(l.dir, LocalKeyFile) }
func (l *Local) previous() string { return filepath.Join(l.dir, LocalPreviousFile) }

// Current returns the local key, generating it on first use.
func (l *Local) Current(ctx context.Context) (chaos.Key, error) {
	k, err := readKeyFile(l.current())
	if errors.Is(err, fs.ErrNotExist) {
		return l.create(ctx)
	}
	return k, err
}

func (l *Local) create(ctx context.Context) (chaos.Key, error) {
	k, err := chaos.GenerateKey(nil)
	if err != nil {
		return chaos.Key{}, err
	}
	if err := l.mkdir(); err != nil {
		return chaos.Key{}, err
	}
	// Complete before it appears, and only if nothing took the name.
	if err := fsutil.CreateNew(ctx, l.current(), keyFileData(k), 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
		return chaos.Key{}, fmt.Errorf("create local chaos key: %w", err)
	}
	// Read back whichever key won a race.
	return readKeyFile(l.current())
}

func (l *Local) mkdir() error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("create local chaos key directory: %w", err)
	}
	return nil
}

func keyFileData(k chaos.Key) []byte { return []byte(k.ExportBase64() + "\n") }

// ByKID returns the current or previous key with id kid.
func (l *Local) ByKID(ctx context.Context, kid string) (chaos.Key, error) {
	return keysByKID(ctx, l, kid)
}

// Keys returns the current key (generating it on first use) and the
// previous key if a rotation left one.
func (l *Local) Keys(ctx context.Context) ([]Staged, error) {
	cur, err := l.Current(ctx)
	if err != nil {
		return nil, err
	}
	staged := []Staged{{Stage: StageCurrent, Key: cur}}
	prev, err := readKeyFile(l.previous())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		staged = append(staged, Staged{Stage: StagePrevious, Key: prev})
	}
	return staged, nil
}

// LocalLockFile is the lock file beside the local key files: Rotate holds
// an flock on it while it compares and replaces them.
const LocalLockFile = "chaos.key.lock"

// localLockWait bounds how long a rotation waits for another one.
const localLockWait = 10 * time.Second

// Rotate generates a new current key and keeps the old one as the previous
// key (replacing any older previous key). Each file is replaced atomically
// by rename, previous first, so a concurrent reader always finds a current
// key. It is a compare-and-set, as on Secrets Manager: under an flock on
// [LocalLockFile] the current key is read again, and if another rotation
// replaced it since this one read it, this one changes nothing and fails
// with an error matching ErrConflict (exit 4). So of rotations that read
// the same key, one wins, and the key it replaced stays the previous key,
// which verifies. The local key has no fleet caching it, so opts (the age
// guard) do not apply.
func (l *Local) Rotate(ctx context.Context, _ RotateOptions) (Rotation, error) {
	old, err := readKeyFile(l.current())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Rotation{}, fmt.Errorf("rotate local chaos key: %w", err)
	}
	if err := l.mkdir(); err != nil {
		return Rotation{}, err
	}
	release, err := fsutil.Lock(filepath.Join(l.dir, LocalLockFile), localLockWait)
	if errors.Is(err, fsutil.ErrLocked) {
		return Rotation{}, fmt.Errorf("rotate local chaos key: %w (%w)", ErrConflict, err)
	}
	if err != nil {
		return Rotation{}, fmt.Errorf("rotate local chaos key: %w", err)
	}
	defer release()
	now, err := readKeyFile(l.current())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Rotation{}, fmt.Errorf("rotate local chaos key: %w", err)
	}
	if now.KID() != old.KID() || now.IsZero() != old.IsZero() {
		return Rotation{}, fmt.Errorf("rotate %s: %w: the current key is kid %s, not kid %s as read; nothing changed (run koshactl chaos key id)",
			l.Describe(), ErrConflict, now.KID(), old.KID())
	}
	retired, _ := readKeyFile(l.previous()) // reported only; a missing or bad one is simply replaced
	// Each file is replaced only if it is a regular file (or absent): a
	// link or a special file planted in the directory is refused.
	if !old.IsZero() {
		if err := fsutil.ReplaceFile(ctx, l.previous(), keyFileData(old), 0o600); err != nil {
			return Rotation{}, fmt.Errorf("rotate local chaos key: %w", err)
		}
	}
	k, err := chaos.GenerateKey(nil)
	if err != nil {
		return Rotation{}, err
	}
	if err := fsutil.ReplaceFile(ctx, l.current(), keyFileData(k), 0o600); err != nil {
		return Rotation{}, fmt.Errorf("rotate local chaos key: %w", err)
	}
	return Rotation{Previous: old, Retired: retired, Current: k}, nil
}

// Describe returns "local key file DIR/chaos.key".
func (l *Local) Describe() string { return "local key file " + l.current() }
