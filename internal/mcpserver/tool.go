package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/mcpserver/sessions"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Tool is one tool of the server. Name, Title, Description and the input
// type's schema are the code's constants.
type Tool struct {
	Name        string
	Title       string
	Description string
	// ReadOnly marks a tool that changes nothing (readOnlyHint). A tool
	// that is not read-only only proposes (it makes a change request).
	ReadOnly bool
	// Input is the JSON schema of the arguments, inferred from the Go type.
	Input *jsonschema.Schema
	// call decodes the arguments strictly and runs the tool.
	call func(ctx context.Context, args json.RawMessage) (Output, error)
}

// Output is what a tool returns: its document (the CLI's -o json) and a
// short summary for the text content. Long names top-level fields of Doc
// bounded to [MaxLong] characters instead of [MaxString], rendered keeping
// newlines (a Markdown summary koshactl rendered itself).
type Output struct {
	Doc     any
	Summary string
	Long    []string
}

// New is a tool whose arguments decode into In (unknown fields refused).
func New[In any](name, title, description string, readOnly bool, run func(ctx context.Context, in In) (Output, error)) Tool {
	schema, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err)) // a programming error, caught by every test
	}
	schema.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return Tool{Name: name, Title: title, Description: description, ReadOnly: readOnly, Input: schema,
		call: func(ctx context.Context, args json.RawMessage) (Output, error) {
			var in In
			if len(bytes.TrimSpace(args)) > 0 && string(bytes.TrimSpace(args)) != "null" {
				dec := json.NewDecoder(bytes.NewReader(args))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&in); err != nil {
					return Output{}, ArgumentsError(name, err)
				}
			}
			return run(ctx, in)
		}}
}

// NewSchema is a tool whose arguments' schema is data (a lever kind's
// proposal), not a Go type: run decodes the arguments itself (null or none
// as an empty object), refusing any the schema does not name, with
// [ArgumentsError].
func NewSchema(name, title, description string, readOnly bool, schema *jsonschema.Schema, run func(ctx context.Context, args json.RawMessage) (Output, error)) Tool {
	return Tool{Name: name, Title: title, Description: description, ReadOnly: readOnly, Input: schema,
		call: func(ctx context.Context, args json.RawMessage) (Output, error) {
			if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
				args = json.RawMessage("{}")
			}
			return run(ctx, args)
		}}
}

// ArgumentsError is the usage error of a tool's arguments that do not fit
// its input schema.
func ArgumentsError(tool string, err error) error {
	return cmdutil.Usagef("arguments of %s: %v (see the tool's input schema)", tool, err)
}

// Annotations are the tool's MCP annotations: read-only, or a proposal
// (not destructive, not idempotent: each call makes a new request; closed
// world: it acts on the context's table only).
func (t Tool) Annotations() *mcp.ToolAnnotations {
	closed := false
	a := &mcp.ToolAnnotations{Title: t.Title, ReadOnlyHint: t.ReadOnly, OpenWorldHint: &closed}
	if !t.ReadOnly {
		a.DestructiveHint = &closed
	}
	return a
}

// Server is an MCP server offering tools, logging each call on log with
// its caller and counts.
type Server struct {
	*mcp.Server
	logMu sync.Mutex
	log   io.Writer
	now   func() time.Time

	// calls counts every tool call; perSession counts each session's
	// (pruned of closed sessions as it grows).
	callsMu    sync.Mutex
	calls      int64
	perSession map[string]int64
}

// NewServer builds the server; name and version are the implementation's.
func NewServer(name, version string, tools []Tool, log io.Writer, now func() time.Time) *Server {
	s := &Server{log: log, now: now, perSession: map[string]int64{}}
	s.Server = mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			s.logf("mcp: session %s opened by caller %s (%d open)", sessionName(req.Session), Caller(req.Session), s.OpenSessions())
		},
	})
	for _, t := range tools {
		s.AddTool(&mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.Input, Annotations: t.Annotations()},
			s.handler(t))
	}
	return s
}

func (s *Server) handler(t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		start := s.now()
		args := req.Params.Arguments
		// The SDK recovers no panic: one in a tool (a bug, or an item
		// shaped to find one) would end the server for every client and
		// print a stack. It is this call's tool error instead, and the
		// log's line; a panic's value is logged only when the runtime made
		// it (it could hold an argument otherwise).
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			what := "a panic"
			if rerr, ok := v.(runtime.Error); ok {
				what = "a panic (" + textsafe.Line(rerr.Error()) + ")"
			}
			res = ErrorResult(fmt.Errorf("tool %s failed: an internal error in koshactl (a bug; the server's log has its stack)", t.Name), Output{})
			s.logf("mcp: %s tool=%s args=%s outcome=error (exit %d, %s): %s\n%s", s.count(req.Session), t.Name, Shape(args), exitcode.Error, ExitName(exitcode.Error), what, debug.Stack())
		}()
		out, err := t.call(ctx, args)
		if err == nil {
			res, err = Result(out)
		}
		outcome := "ok"
		if err != nil {
			res = ErrorResult(err, out)
			code := ExitCode(err)
			outcome = fmt.Sprintf("error (exit %d, %s)", code, ExitName(code))
		}
		s.logf("mcp: %s tool=%s args=%s outcome=%s in %s", s.count(req.Session), t.Name, Shape(args), outcome, s.now().Sub(start).Round(time.Millisecond))
		return res, nil
	}
}

// OpenSessions counts the sessions connected now.
func (s *Server) OpenSessions() int {
	n := 0
	for range s.Sessions() {
		n++
	}
	return n
}

// count counts a call of session's and says who made it, for the call's
// log line: `call=12 caller="claude-code 1.0.3" session=1a2b3c4d
// session_calls=3` (the server's twelfth call, the session's third).
func (s *Server) count(ss *mcp.ServerSession) string {
	id := ""
	if ss != nil {
		id = ss.ID()
	}
	s.callsMu.Lock()
	s.calls++
	s.perSession[id]++
	n, k := s.calls, s.perSession[id]
	if len(s.perSession) > 2*sessions.MaxMaxSessions { // forget closed sessions
		open := map[string]bool{}
		for o := range s.Sessions() {
			open[o.ID()] = true
		}
		for other := range s.perSession {
			if !open[other] && other != id {
				delete(s.perSession, other)
			}
		}
	}
	s.callsMu.Unlock()
	return fmt.Sprintf("call=%d caller=%s session=%s session_calls=%d", n, Caller(ss), sessionName(ss), k)
}

// Caller is who a session's client says it is (its clientInfo name and
// version), quoted and bounded: a client's claim for the log, never
// verified (every client holds the same token).
func Caller(ss *mcp.ServerSession) string {
	who := "unknown"
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			who = strings.TrimSpace(p.ClientInfo.Name + " " + p.ClientInfo.Version)
		}
	}
	return textsafe.Quote(textsafe.Truncate(who, 64))
}

// sessionName is a session's id as the log shows it (its first 8
// characters; "stdio" for the one session of stdio).
func sessionName(ss *mcp.ServerSession) string {
	if ss == nil || ss.ID() == "" {
		return "stdio"
	}
	return textsafe.Line(textsafe.Truncate(ss.ID(), 8))
}

func (s *Server) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.log, format+"\n", args...)
}

// Result is out as a tool result: the sanitized document as structured
// content, and the summary (sanitized too) as text.
func Result(out Output) (*mcp.CallToolResult, error) {
	doc, err := Sanitize(out.Doc, out.Long...)
	if err != nil {
		return nil, err
	}
	summary := bound(out.Summary, MaxString, false)
	return &mcp.CallToolResult{StructuredContent: doc, Content: []mcp.Content{&mcp.TextContent{Text: summary}}}, nil
}

// MaxShapeKeys bounds how many argument keys a log line names.
const MaxShapeKeys = 16

// Shape is the shape of a call's arguments for the log: each key (rendered
// and cut to 40 characters) with its JSON type, sorted, never a value.
func Shape(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return "(not an object)"
	}
	keys := slices.Sorted(maps.Keys(m))
	var parts []string
	for i, k := range keys {
		if i == MaxShapeKeys {
			parts = append(parts, fmt.Sprintf("…(%d more)", len(keys)-i))
			break
		}
		parts = append(parts, textsafe.Line(textsafe.Truncate(k, 40))+":"+jsonType(m[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "none"
	}
	switch c := v[0]; {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't', c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case slices.Contains([]byte("-0123456789"), c):
		return "number"
	}
	return "invalid"
}
