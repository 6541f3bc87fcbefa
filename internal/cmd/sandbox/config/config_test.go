package config_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/sandbox/config"
	sbx "github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The printed configuration is pinned byte for byte: the defaults, a
// profile, and a file that sets every key.
func TestPrintsTheGoldenConfiguration(t *testing.T) {
	for _, tc := range []struct {
		golden string
		opts   config.Options
	}{
		{"default.golden", config.Options{}},
		{"flaky.golden", config.Options{Profile: sbx.ProfileFlaky}},
		{"every-key.golden", config.Options{ConfigFile: filepath.Join("testdata", "every-key.yaml")}},
	} {
		io, _, out, _ := iostreams.Test()
		if err := config.Run(context.Background(), &cmdenv.Factory{IOStreams: io}, &tc.opts); err != nil {
			t.Fatalf("%s: %v", tc.golden, err)
		}
		path := filepath.Join("testdata", tc.golden)
		if *update {
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != string(want) {
			t.Errorf("%s: output differs from the golden file (go test -update rewrites it):\n%s", tc.golden, out)
		}
	}
}

func TestBadFileIsAUsageError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(path, []byte("emf: {instance-dimension: maybe}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	io, _, out, _ := iostreams.Test()
	err := config.Run(context.Background(), &cmdenv.Factory{IOStreams: io}, &config.Options{ConfigFile: path})
	if exitcode.Of(err) != exitcode.Usage || !errors.Is(err, sbx.ErrInvalidConfig) || out.Len() != 0 {
		t.Errorf("exit %d, %v, printed %q: want a usage error and nothing printed", exitcode.Of(err), err, out)
	}
}
