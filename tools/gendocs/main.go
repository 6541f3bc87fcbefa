// Command gendocs writes koshactl's CLI reference (one Markdown page per
// command) into the directory given as its only argument. `make docs`
// refreshes docs/cli; `make docs-check` fails when it is stale.
//
// `gendocs -iam FILE` rewrites the role policy blocks of FILE (docs/iam.md)
// from internal/iam; with -check it changes nothing and fails when they are
// stale. `gendocs -mcp FILE` does the same for the tool list of docs/mcp.md,
// from internal/cmd/mcp's tool table.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	mcpcmd "github.com/kosha-platform/koshactl/internal/cmd/mcp"
	"github.com/kosha-platform/koshactl/internal/cmd/mcptools"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
)

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "-iam" {
		os.Exit(fillDoc(os.Args[2], len(os.Args) == 4 && os.Args[3] == "-check", iam.FillDoc, "policy blocks"))
	}
	if len(os.Args) >= 3 && os.Args[1] == "-mcp" {
		os.Exit(fillDoc(os.Args[2], len(os.Args) == 4 && os.Args[3] == "-check", func(md string) (string, error) {
			return mcpcmd.FillDoc(md, mcptools.Tools, builtin.For(nil, nil, "doc", config.BuiltinLocal()))
		}, "MCP tool list"))
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DIR | gendocs -iam FILE [-check] | gendocs -mcp FILE [-check]")
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

// fillDoc fills the generated blocks (what) of file with fill; with check
// it only reports whether they are current. It returns the exit code.
func fillDoc(file string, check bool, fill func(string) (string, error), what string) int {
	b, err := os.ReadFile(file) //nolint:gosec // G304: the document the developer names
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	filled, err := fill(string(b))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
		return 1
	}
	if filled == string(b) {
		return 0
	}
	if check {
		fmt.Fprintf(os.Stderr, "%s: its %s are stale: run make docs\n", file, what)
		return 1
	}
	if err := os.WriteFile(file, []byte(filled), 0o600); err != nil { //nolint:gosec // G703: the document the developer names
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
