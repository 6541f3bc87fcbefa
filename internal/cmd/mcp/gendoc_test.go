package mcp_test

import (
	"github.com/kosha-platform/koshactl/internal/cmd/mcptools"
	"os"
	"testing"

	mcpcmd "github.com/kosha-platform/koshactl/internal/cmd/mcp"
)

// docs/mcp.md's tool list is the server's tool table: a tool added,
// renamed or described anew fails here until make docs regenerates it.
func TestDocsToolListIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	filled, err := mcpcmd.FillDoc(string(b), mcptools.Tools)
	if err != nil {
		t.Fatal(err)
	}
	if filled != string(b) {
		t.Error("docs/mcp.md's tool list is stale: run make docs")
	}
}
