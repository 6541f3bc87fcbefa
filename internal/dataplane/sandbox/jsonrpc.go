package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// JSON-RPC 2.0 error codes the tool endpoint answers with. The -320xx codes
// are the sandbox's own (the range JSON-RPC reserves for servers).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeUnauthorized: no bearer token, or one no principal holds (HTTP 401).
	CodeUnauthorized = -32001
	// CodeRateLimited: the client's bucket is empty (HTTP 429); data carries
	// retry_after_s.
	CodeRateLimited = -32029
	// CodeOverloaded: the instance sheds load (HTTP 503, Retry-After: 1).
	CodeOverloaded = -32053
)

// maxBodyBytes bounds a request body.
const maxBodyBytes = 1 << 20

// rpcRequest is a JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// notification reports a request without an id (no response expected).
func (r *rpcRequest) notification() bool { return len(r.ID) == 0 }

// rpcResponse is a JSON-RPC 2.0 response: exactly one of Result and Error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ToolError `json:"data,omitempty"`
}

// Error returns the message.
func (e *RPCError) Error() string { return e.Message }

// ToolError is what a failed tool call or a refused request tells the
// client: a stable error code, the dependency to blame and when to retry.
type ToolError struct {
	// Code is the error code: dependency_unavailable, dependency_error,
	// deadline_exceeded, timeout, overloaded, rate_limited, invalid_params,
	// unauthorized.
	Code    string `json:"error"`
	Message string `json:"message"`
	// Dependency names the downstream at fault ("core-api").
	Dependency string `json:"dependency,omitempty"`
	// RetryAfter is when to try again, in whole seconds rounded up.
	RetryAfter int `json:"retry_after_s,omitempty"`
}

// ToolResult is an MCP CallToolResult: the tool's answer as structured
// content and as the same JSON in a text block. It holds the answer encoded
// once; MarshalJSON lays it out.
type ToolResult struct {
	// Structured is the answer's JSON.
	Structured json.RawMessage
	// IsError marks a failed tool call.
	IsError bool
}

// ContentBlock is one MCP content block.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// MarshalJSON encodes the MCP shape: {"content": [{"type": "text", "text":
// JSON}], "structuredContent": JSON, "isError": bool}.
func (r ToolResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Content           []ContentBlock  `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}{[]ContentBlock{{Type: "text", Text: string(r.Structured)}}, r.Structured, r.IsError})
}

// newToolResult wraps a tool's answer.
func newToolResult(v any, isError bool) (ToolResult, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return ToolResult{}, fmt.Errorf("encode tool result: %w", err)
	}
	return ToolResult{Structured: raw, IsError: isError}, nil
}

// callParams are the params of tools/call.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// readRequest reads and checks one JSON-RPC request from r's body.
func readRequest(r *http.Request) (*rpcRequest, *RPCError) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &RPCError{Code: CodeInvalidRequest, Message: "request body over " + strconv.Itoa(maxBodyBytes) + " bytes"}
		}
		return nil, &RPCError{Code: CodeParseError, Message: "read request body: " + err.Error()}
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return nil, &RPCError{Code: CodeInvalidRequest, Message: "batch requests are not supported: send one request per POST"}
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, &RPCError{Code: CodeParseError, Message: "parse JSON-RPC request: " + err.Error()}
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return &req, &RPCError{Code: CodeInvalidRequest, Message: `not a JSON-RPC 2.0 request: need "jsonrpc": "2.0" and a method`}
	}
	return &req, nil
}

// writeRPC writes one response with the given HTTP status, encoded by
// encoding/json. A hand-written encoding into pooled buffers saved about
// 10–25 µs of CPU per tool call (BenchmarkRPCRoundTrip), which the sandbox's
// few hundred requests a second do not need (docs/benchmarks/sandbox.md).
func writeRPC(w http.ResponseWriter, status int, resp rpcResponse) {
	resp.JSONRPC = "2.0"
	if len(resp.ID) == 0 {
		resp.ID = json.RawMessage("null")
	}
	b, err := json.Marshal(resp)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"encode response"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if resp.Error != nil && resp.Error.Data != nil && resp.Error.Data.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(resp.Error.Data.RetryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
