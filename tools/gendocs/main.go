// Command gendocs writes koshactl's CLI reference (one Markdown page per
// command) into the directory given as its only argument. `make docs`
// refreshes docs/cli; `make docs-check` fails when it is stale.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DIR")
		os.Exit(2)
	}
	ios, _, _, _ := iostreams.Test()
	f := factory.NewWith(ios, clock.Real{})
	f.ContextName = ""
	started := false
	cmd := root.NewCmd(f, &started)
	cmd.DisableAutoGenTag = true
	if err := os.MkdirAll(os.Args[1], 0o750); err != nil { //nolint:gosec // G703: the output directory the developer names
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := doc.GenMarkdownTree(cmd, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
