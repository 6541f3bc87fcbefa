// Package build reports which koshactl this is: module version, VCS commit and
// build date, from linker flags when set and from the Go build info otherwise
// (so `go install .../cmd/koshactl@v1.2.3` reports v1.2.3).
package build

import (
	"runtime/debug"
	"strings"
	"sync"
)

// Set by -ldflags "-X github.com/kosha-platform/koshactl/internal/build.Version=..." in release builds.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

var infoOnce = sync.OnceValue(func() Info {
	in := Info{Version: Version, Commit: Commit, Date: Date}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fill(in)
	}
	in.GoVersion = bi.GoVersion
	if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		in.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if in.Commit == "" {
				in.Commit = s.Value
			}
		case "vcs.time":
			if in.Date == "" {
				in.Date = s.Value
			}
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return fill(in)
})

func fill(in Info) Info {
	if strings.HasSuffix(in.Version, "-dirty") {
		in.Modified = true
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	if in.Date == "" {
		in.Date = "unknown"
	}
	return in
}

// Get returns the binary's build information.
func Get() Info { return infoOnce() }
