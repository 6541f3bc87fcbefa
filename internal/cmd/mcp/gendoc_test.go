package mcp_test

import (
	"os"
	"testing"

	mcpcmd "github.com/kosha-platform/koshactl/internal/cmd/mcp"
	"github.com/kosha-platform/koshactl/internal/cmd/mcptools"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
)

// docs/mcp.md's tool list is the server's tool table: a tool added,
// renamed or described anew fails here until make docs regenerates it.
func TestDocsToolListIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	filled, err := mcpcmd.FillDoc(string(b), mcptools.Tools, builtin.For(nil, nil, "doc", config.BuiltinLocal()))
	if err != nil {
		t.Fatal(err)
	}
	if filled != string(b) {
		t.Error("docs/mcp.md's tool list is stale: run make docs")
	}
}
