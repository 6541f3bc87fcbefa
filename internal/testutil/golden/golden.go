package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the flag every package that uses golden files gets.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Check compares got with testdata/name, after rewriting the file with got
// when the test runs with -update. A difference fails t with both texts.
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path) //nolint:gosec // G304: the test's own testdata file
	if err != nil {
		t.Fatalf("%v (run go test -run '%s' -update to record it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
