package mcp

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/lever"
)

// The markers of the generated tool list in docs/mcp.md.
const (
	docBegin = "<!-- BEGIN generated: koshactl mcp tools (make docs) -->"
	docEnd   = "<!-- END generated: koshactl mcp tools -->"
)

// ToolsDoc is the tool list of docs/mcp.md, generated from tools (on the
// built-in local context, whose lever kinds are kinds) so it cannot drift:
// each tool's name, kind, description and arguments.
func ToolsDoc(tools Toolset, kinds *lever.Registry) string {
	env := &cmdenv.Env{Name: "doc", Context: config.BuiltinLocal(), Kinds: kinds}
	var b strings.Builder
	for _, t := range tools(&cmdenv.Factory{}, env) {
		kind := "read (readOnlyHint)"
		if !t.ReadOnly {
			kind = "proposal: makes a change request, changes nothing"
		}
		fmt.Fprintf(&b, "### `%s`: %s\n\n%s\n\n*%s*\n\n", t.Name, t.Title, t.Description, kind)
		names := slices.Sorted(maps.Keys(t.Input.Properties))
		if len(names) == 0 {
			b.WriteString("No arguments.\n\n")
			continue
		}
		b.WriteString("| argument | type | required | meaning |\n|---|---|---|---|\n")
		for _, name := range names {
			p := t.Input.Properties[name]
			typ := p.Type
			for _, t := range p.Types { // a slice is ["null", "array"]: a missing argument is the default
				if typ == "" && t != "null" {
					typ = t
				}
			}
			if typ == "array" && p.Items != nil {
				typ = p.Items.Type + "[]"
			}
			req := "no"
			if slices.Contains(t.Input.Required, name) {
				req = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, typ, req, p.Description)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// FillDoc returns md with its generated tool list replaced by the
// [ToolsDoc] of tools and kinds.
func FillDoc(md string, tools Toolset, kinds *lever.Registry) (string, error) {
	i := strings.Index(md, docBegin)
	j := strings.Index(md, docEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q block", docBegin, docEnd)
	}
	return md[:i+len(docBegin)] + "\n\n" + ToolsDoc(tools, kinds) + md[j:], nil
}
