package keys_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
)

var testKeyB64 = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789ABCDEF"))

func writeKeyFile(t *testing.T, content string, mode fs.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chaos.key")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is filtered by umask
		t.Fatal(err)
	}
	return path
}

func TestFileSource(t *testing.T) {
	ctx := context.Background()
	want, _ := chaos.DecodeKey(testKeyB64)
	for _, mode := range []fs.FileMode{0o600, 0o400} {
		path := writeKeyFile(t, testKeyB64+"\n", mode)
		src := keys.NewFile(path)
		k, err := src.Current(ctx)
		if err != nil || !k.Equal(want) {
			t.Fatalf("mode %04o: %v", mode, err)
		}
		if _, err := src.ByKID(ctx, want.KID()); err != nil {
			t.Errorf("ByKID own kid: %v", err)
		}
		if _, err := src.ByKID(ctx, "AAAAAAAAAAA"); !errors.Is(err, chaos.ErrUnknownKID) || !strings.Contains(err.Error(), path) {
			t.Errorf("ByKID other kid: %v", err)
		}
		if src.Describe() != "key file "+path {
			t.Errorf("describe %q", src.Describe())
		}
	}
}

func TestFileSourceRefusesOpenPermissions(t *testing.T) {
	for _, mode := range []fs.FileMode{0o644, 0o640, 0o604, 0o660, 0o666, 0o610} {
		path := writeKeyFile(t, testKeyB64, mode)
		_, err := keys.NewFile(path).Current(context.Background())
		var ie *keys.InsecureFileError
		if !errors.Is(err, keys.ErrInsecureFile) || !errors.As(err, &ie) {
			t.Fatalf("mode %04o: %v, want ErrInsecureFile", mode, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "chmod 600 "+path) || !strings.Contains(msg, fmt.Sprintf("mode %04o", mode.Perm())) {
			t.Errorf("mode %04o: message %q lacks the mode or the fix", mode, msg)
		}
		if strings.Contains(msg, testKeyB64[:12]) {
			t.Errorf("message leaks the key: %q", msg)
		}
	}
}

func TestFileSourceProblems(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	_, err := keys.NewFile(filepath.Join(dir, "absent")).Current(ctx)
	if !errors.Is(err, keys.ErrNoKey) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "absent") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := keys.NewFile(dir).Current(ctx); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	if _, err := keys.NewFile(writeKeyFile(t, "\n  \n", 0o600)).Current(ctx); !errors.Is(err, keys.ErrNoKey) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}
	const secretish = "c2VjcmV0LXNlY3JldC1zZWNyZXQ=" //nolint:gosec // G101: a made-up value the error must not echo
	_, err = keys.NewFile(writeKeyFile(t, secretish, 0o600)).Current(ctx)
	if !errors.Is(err, chaos.ErrInvalidKey) || strings.Contains(err.Error(), secretish) {
		t.Errorf("short key: %v", err)
	}
	if _, err := keys.NewFile(writeKeyFile(t, strings.Repeat("A", 5000), 0o600)).Current(ctx); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("huge file: %v", err)
	}

	// A symlink is followed, and the mode checked is the target's.
	target := writeKeyFile(t, testKeyB64, 0o600)
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.NewFile(link).Current(ctx); err != nil {
		t.Errorf("symlink to a 0600 file: %v", err)
	}
}

func TestEnvSource(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"GOOD": testKeyB64 + "\n", "EMPTY": "", "BAD": "not!base64!but-secret-ish-content"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	k, err := keys.NewEnvLookup("GOOD", lookup).Current(ctx)
	if err != nil || k.IsZero() {
		t.Fatalf("good variable: %v", err)
	}
	if _, err := keys.NewEnvLookup("GOOD", lookup).ByKID(ctx, k.KID()); err != nil {
		t.Errorf("ByKID: %v", err)
	}
	for name, want := range map[string]string{"UNSET": "is not set", "EMPTY": "is empty"} {
		if _, err := keys.NewEnvLookup(name, lookup).Current(ctx); !errors.Is(err, keys.ErrNoKey) || !strings.Contains(err.Error(), name+" "+want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = keys.NewEnvLookup("BAD", lookup).Current(ctx)
	if !errors.Is(err, chaos.ErrInvalidKey) || strings.Contains(err.Error(), "secret-ish") || !strings.Contains(err.Error(), "BAD") {
		t.Errorf("bad variable: %v", err)
	}

	t.Setenv(keys.DefaultEnvVar, testKeyB64)
	src := keys.NewEnv("")
	if k2, err := src.Current(ctx); err != nil || !k2.Equal(k) {
		t.Errorf("process environment: %v", err)
	}
	if src.Describe() != "environment variable KOSHA_CHAOS_KEY" {
		t.Errorf("describe %q", src.Describe())
	}
	if _, ok := any(src).(keys.Rotator); ok {
		t.Error("an environment variable claims to rotate")
	}
}

func TestLocalGeneratesOnFirstUse(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state", "local")
	src := keys.NewLocal(dir)
	k1, err := src.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, keys.LocalKeyFile)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, st.Mode())
	}
	if dst, _ := os.Stat(dir); dst.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %v, want 0700", dst.Mode().Perm())
	}
	content, _ := os.ReadFile(path)
	if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(content))); err != nil || len(raw) != chaos.KeySize {
		t.Errorf("key file is not standard base64 of %d bytes", chaos.KeySize)
	}
	// The same key on every later use, from any instance.
	k2, err := keys.NewLocal(dir).Current(ctx)
	if err != nil || !k2.Equal(k1) {
		t.Fatalf("second use: %v", err)
	}
	// The file reads as a --key-file too: one format everywhere.
	if k3, err := keys.NewFile(path).Current(ctx); err != nil || !k3.Equal(k1) {
		t.Errorf("as a key file: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want just the key (temporary files left behind?)", len(entries))
	}
}

func TestLocalFirstUseRace(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "race")
	const racers = 16
	kids := make([]string, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			k, err := keys.NewLocal(dir).Current(ctx)
			kids[i], errs[i] = k.KID(), err
		})
	}
	close(start)
	wg.Wait()
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if kids[i] != kids[0] {
			t.Fatalf("racers ended with different keys: %v", kids)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries after the race, want 1", len(entries))
	}
}

func TestLocalNeverReplacesAnExistingKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, keys.LocalKeyFile)

	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.NewLocal(dir).Current(ctx); !errors.Is(err, chaos.ErrInvalidKey) {
		t.Errorf("broken key file: %v, want it reported", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "garbage" {
		t.Error("a broken key file was overwritten")
	}

	if err := os.WriteFile(path, []byte(testKeyB64), 0o644); err != nil { //nolint:gosec // G306: a readable key file is what this test must see refused
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { //nolint:gosec // G302: a readable key file is what this test must see refused
		t.Fatal(err)
	}
	if _, err := keys.NewLocal(dir).Current(ctx); !errors.Is(err, keys.ErrInsecureFile) {
		t.Errorf("world-readable key file: %v", err)
	}
}

func TestLocalRotate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := keys.NewLocal(dir)
	k1, err := src.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Rotate(ctx, keys.RotateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Previous.Equal(k1) || r.Current.Equal(k1) {
		t.Fatalf("rotation %+v", r)
	}
	if cur, _ := src.Current(ctx); !cur.Equal(r.Current) {
		t.Error("current key is not the rotated one")
	}
	if _, err := src.ByKID(ctx, k1.KID()); err != nil {
		t.Errorf("previous key after rotation: %v", err)
	}
	staged, err := src.Keys(ctx)
	if err != nil || len(staged) != 2 || staged[0].Stage != keys.StageCurrent || !staged[1].Key.Equal(k1) {
		t.Fatalf("Keys %+v, %v", staged, err)
	}
	if st, _ := os.Stat(filepath.Join(dir, keys.LocalPreviousFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("previous key file mode %v", st.Mode().Perm())
	}

	if _, err := src.Rotate(ctx, keys.RotateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = src.ByKID(ctx, k1.KID())
	if !errors.Is(err, chaos.ErrUnknownKID) || !strings.Contains(err.Error(), "AWSPREVIOUS kid "+r.Current.KID()) {
		t.Errorf("key two rotations old: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("directory holds %d entries, want current, previous and the rotation lock (%s)", len(entries), keys.LocalLockFile)
	}

	// Rotating before first use just creates the key.
	fresh := keys.NewLocal(filepath.Join(t.TempDir(), "new"))
	r, err = fresh.Rotate(ctx, keys.RotateOptions{})
	if err != nil || !r.Previous.IsZero() || r.Current.IsZero() {
		t.Errorf("rotate before first use: %+v, %v", r, err)
	}
}
