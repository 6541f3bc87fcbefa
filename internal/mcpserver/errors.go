package mcpserver

import (
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// ErrorDoc is a tool error's structured content: the CLI's one-line
// message, and the exit code the CLI would exit with and its name
// (docs/exit-codes.md).
type ErrorDoc struct {
	Kind     string `json:"kind"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
	ExitName string `json:"exit_name"`
	// Result is what could be read when a read was incomplete (breaker
	// status with one source down), as the CLI prints it before exiting.
	Result any `json:"result,omitempty"`
}

// ExitCode is the code the CLI would exit with for err.
func ExitCode(err error) int { return exitcode.Of(err) }

// ExitName is code's name in docs/exit-codes.md.
func ExitName(code int) string { return exitcode.Kind(code).String() }

// ErrorResult is err as a tool error: IsError, the one-line message (as
// the CLI prints it after "error: ") with the exit code's name as text,
// and an [ErrorDoc] as structured content, sanitized like any result.
// partial, when its Doc is set, is what could be read.
func ErrorResult(err error, partial Output) *mcp.CallToolResult {
	code := ExitCode(err)
	msg := oneLine(err)
	doc := ErrorDoc{Kind: "ToolError", Error: msg, ExitCode: code, ExitName: ExitName(code), Result: partial.Doc}
	clean, serr := Sanitize(doc, partial.Long...)
	if serr != nil {
		clean, _ = Sanitize(ErrorDoc{Kind: "ToolError", Error: msg, ExitCode: code, ExitName: ExitName(code)})
	}
	text := bound("error (exit "+ExitName(code)+"): "+msg, MaxString, false)
	return &mcp.CallToolResult{IsError: true, StructuredContent: clean, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// oneLine joins a wrapped, multi-line message on its spaces, tabs and
// newlines, as the CLI prints it, with the hint the CLI prints under it.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	join := func(s string) string {
		return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }), " ")
	}
	msg := join(err.Error())
	var hinted *cmdutil.HintError
	if errors.As(err, &hinted) && hinted.Hint != "" {
		msg += " (" + join(hinted.Hint) + ")"
	}
	return msg
}
