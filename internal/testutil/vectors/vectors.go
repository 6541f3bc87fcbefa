package vectors

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Dir is where the vector files live, relative to the repository root.
const Dir = "docs/contracts/vectors"

var update = flag.Bool("update-vectors", false, "rewrite docs/contracts/vectors from the code (make vectors)")

// Encode renders a vector document as the files hold it: indented JSON,
// HTML characters unescaped, one trailing newline.
func Encode(doc any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Path returns the absolute path of vector file name, found by walking up
// from the working directory to go.mod.
func Path(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, filepath.FromSlash(Dir), name)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("find the repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Check compares doc, encoded, with the checked-in file name under [Dir];
// with -update-vectors it writes the file instead.
func Check(tb testing.TB, name string, doc any) {
	tb.Helper()
	got, err := Encode(doc)
	if err != nil {
		tb.Fatalf("encode %s: %v", name, err)
	}
	path := Path(tb, name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil { //nolint:gosec // G306: a checked-in documentation file
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path) //nolint:gosec // G304: a file of the repository
	if err != nil {
		tb.Fatalf("read %s: %v (run make vectors)", name, err)
	}
	if !bytes.Equal(got, want) {
		tb.Fatalf("%s/%s differs from what the code produces (first difference: %s): "+
			"the code changed a contract rule; if that is meant, run make vectors and review the diff", Dir, name, firstDiff(want, got))
	}
}

// firstDiff describes the first line where the two files differ.
func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d: file has %q, code gives %q", i+1, strings.TrimSpace(wl), strings.TrimSpace(gl))
		}
	}
	return "none"
}
