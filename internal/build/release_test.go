package build_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestOneVersionString: issue 22. Snapshot archives were named
// 0.0.1-snapshot-<sha> while the binary inside said <sha>. The version the
// binary is stamped with, the archives' names and a snapshot's version are
// one template, the git describe output make build stamps (make
// release-check builds with goreleaser and compares them).
func TestOneVersionString(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var gr struct {
		Builds []struct {
			ID      string   `yaml:"id"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
		Archives []struct {
			NameTemplate string `yaml:"name_template"`
		} `yaml:"archives"`
		Snapshot struct {
			VersionTemplate string `yaml:"version_template"`
		} `yaml:"snapshot"`
	}
	if err := yaml.Unmarshal(b, &gr); err != nil {
		t.Fatal(err)
	}
	const version = "{{ .Summary }}"
	const flag = "-X github.com/kosha-platform/koshactl/internal/build.Version=" + version + " "
	// The front and the full program, stamped alike: the full program
	// refuses a front of another build.
	if len(gr.Builds) != 2 || gr.Builds[0].ID != "koshactl" || gr.Builds[1].ID != "koshactl-full" {
		t.Errorf("builds %v, want koshactl and koshactl-full", gr.Builds)
	}
	for _, b := range gr.Builds {
		if len(b.Ldflags) != 1 || !strings.Contains(b.Ldflags[0], flag) {
			t.Errorf("%s's version is not stamped from %s: %v", b.ID, version, b.Ldflags)
		}
	}
	for _, a := range gr.Archives {
		if a.NameTemplate != "{{ .ProjectName }}_"+version+"_{{ .Os }}_{{ .Arch }}" {
			t.Errorf("archives are named %q: want the binary's version, %s", a.NameTemplate, version)
		}
	}
	if gr.Snapshot.VersionTemplate != version {
		t.Errorf("a snapshot's version is %q: want the binary's, %s", gr.Snapshot.VersionTemplate, version)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "BUILD_VERSION  = $(shell git describe --tags --always --dirty 2>/dev/null)") {
		t.Error("make build no longer stamps git describe --tags --always --dirty, which .Summary is")
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "koshactl_${v}_${os}_${arch}.tar.gz") || !strings.Contains(string(readme), "v=v1.0.0") {
		t.Error("the README's install section does not download the archive named by the version koshactl reports")
	}
}
