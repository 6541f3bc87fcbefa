package layout_test

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/kosha-platform/koshactl/"

// dataPlane are the reference data plane's packages (and everything below
// them).
var dataPlane = []string{
	module + "internal/dataplane",
}

// hosts run the sandbox fleet, or contain the command that does.
var hosts = []string{
	module + "cmd/koshactl",
	module + "internal/cmd/root",
	module + "internal/cmd/sandbox",
	module + "internal/testutil/clitest",
	module + "tools/gendocs",
}

func under(pkg string, roots []string) bool {
	for _, r := range roots {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}

// TestControlPlaneNeverImportsTheDataPlane lists every package's
// dependencies (tests excluded) with the go command and fails on a
// control-plane package that reaches a data-plane one.
func TestControlPlaneNeverImportsTheDataPlane(t *testing.T) {
	gobin := filepath.Join(build.Default.GOROOT, "bin", "go")
	out, err := exec.CommandContext(t.Context(), gobin, "list", "-deps=false", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"...").Output() //nolint:gosec // G204: the go command of this toolchain
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	found := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, deps := f[0], f[1:]
		if under(pkg, dataPlane) {
			found[strings.TrimPrefix(pkg, module)] = true
		}
		if under(pkg, dataPlane) || under(pkg, hosts) {
			continue
		}
		checked++
		for _, d := range deps {
			if under(d, dataPlane) {
				t.Errorf("%s imports the data plane's %s: move the shared part into a contract package both import", strings.TrimPrefix(pkg, module), strings.TrimPrefix(d, module))
			}
		}
	}
	// The reference data plane's packages all sit in its tree.
	for _, p := range []string{"internal/dataplane/circuit", "internal/dataplane/limiter", "internal/dataplane/resilience", "internal/dataplane/sandbox"} {
		if !found[p] {
			t.Errorf("%s is not in the data-plane tree: the layout moved without this test", p)
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d control-plane packages; the listing is wrong", checked)
	}
}
