package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// handWrittenResponse is the encoder writeRPC used before it was plain
// encoding/json: the tool result copied in by hand into a pooled buffer. It
// stays here as the reference of the wire shape and the baseline of
// BenchmarkRPCRoundTrip.
func handWrittenResponse(b []byte, id json.RawMessage, r ToolResult) []byte {
	raw := r.Structured
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"content":[{"type":"text","text":"`...)
	for _, c := range raw { // json.Marshal wrote raw: only quotes and backslashes need escaping
		if c == '"' || c == '\\' {
			b = append(b, '\\', c)
		} else {
			b = append(b, c)
		}
	}
	b = append(b, `"}],"structuredContent":`...)
	b = append(b, raw...)
	b = append(b, `,"isError":`...)
	b = strconv.AppendBool(b, r.IsError)
	return append(b, "}}\n"...)
}

var (
	handBodyBufs     = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 1024)) }}
	handResponseBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
)

// handReadRequest is readRequest's former body read into a pooled buffer.
func handReadRequest(r *http.Request) (*rpcRequest, error) {
	buf := handBodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer handBodyBufs.Put(buf)
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, maxBodyBytes)); err != nil {
		return nil, err
	}
	var req rpcRequest
	return &req, json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &req)
}

func handWriteRPC(w http.ResponseWriter, status int, id json.RawMessage, tr ToolResult) {
	bp := handResponseBufs.Get().(*[]byte)
	b := handWrittenResponse((*bp)[:0], id, tr)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	*bp = b
	handResponseBufs.Put(bp)
}

// The response writeRPC sends for a tool result must decode exactly as the
// hand-written encoding it replaced, field for field.
func TestToolResponseWireShape(t *testing.T) {
	t.Parallel()
	values := []any{
		map[string]any{"q": `he said "hi" \ and left`, "html": "<a href='x'>&</a>", "nl": "a\nb\tc\r", "ctl": "\x00\x1f",
			"uni": "Ünïcödé ✓ \u2028 \u2029 😀", "n": 1.5, "b": true, "nil": nil, "list": []any{"x", 2, map[string]any{}}},
		ToolError{Code: "dependency_unavailable", Message: `core-api "forced" \ drill`, Dependency: "core-api", RetryAfter: 5},
		SearchResult{Results: []SearchHit{{ID: "kb-1", Title: "T", Score: 0.5, Snippet: "s…"}}, Ranking: "hybrid"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]rune, r.IntN(40))
		for i := range b {
			b[i] = rune(r.IntN(0x3000)) //nolint:gosec // G115: below 0x3000, a valid rune
		}
		values = append(values, map[string]string{"s": string(b)})
	}
	for i, v := range values {
		for _, isErr := range []bool{false, true} {
			tr, err := newToolResult(v, isErr)
			if err != nil {
				t.Fatal(err)
			}
			id := json.RawMessage(`{"k": [1, "two"]}`)
			rec := httptest.NewRecorder()
			writeRPC(rec, http.StatusOK, rpcResponse{ID: id, Result: tr})
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" || !strings.HasSuffix(rec.Body.String(), "}\n") {
				t.Fatalf("content type %q, body %q: want JSON ending in a newline", ct, rec.Body.String())
			}
			var got, want map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("value %d: writeRPC wrote invalid JSON: %v\n%s", i, err, rec.Body.Bytes())
			}
			if err := json.Unmarshal(handWrittenResponse(nil, id, tr), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("value %d: wire shape differs:\n got  %s\n want %s", i, rec.Body.Bytes(), handWrittenResponse(nil, id, tr))
			}
		}
	}
}

func TestReadRequestRefusesOversizedBodiesAndBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		code int
	}{
		{strings.Repeat(" ", maxBodyBytes+1), CodeInvalidRequest},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest},
		{`{"jsonrpc":`, CodeParseError},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest},
	} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", strings.NewReader(tc.body))
		if _, rerr := readRequest(req); rerr == nil || rerr.Code != tc.code {
			t.Errorf("body %.40q: %v, want code %d", tc.body, rerr, tc.code)
		}
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", strings.NewReader(` {"jsonrpc":"2.0","id":7,"method":"ping"} `))
	if got, rerr := readRequest(req); rerr != nil || got.Method != "ping" || string(got.ID) != "7" {
		t.Errorf("readRequest = %+v, %v", got, rerr)
	}
}

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (*nopWriter) WriteHeader(int)               {}

// BenchmarkRPCRoundTrip compares, in one run, the JSON-RPC read and write of
// one search_knowledge_base call done by encoding/json (what the gateway
// does) and by the hand-written, pooled encoding it replaced.
func BenchmarkRPCRoundTrip(b *testing.B) {
	hits := make([]SearchHit, 5)
	for i := range hits {
		hits[i] = SearchHit{ID: "kb-" + strconv.Itoa(i), Title: "How to raise a dispute", Score: 0.42,
			Snippet: strings.Repeat(`a "quoted" snippet & <more> `, 6)}
	}
	tr, err := newToolResult(SearchResult{Results: hits, Ranking: "hybrid"}, false)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_knowledge_base","arguments":{"query":"how do I raise a dispute"}}}`)
	for _, impl := range []string{"hand-pooled", "encoding-json"} {
		b.Run("impl="+impl, func(b *testing.B) {
			w := &nopWriter{h: http.Header{}}
			reader := bytes.NewReader(body)
			req := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "/mcp", reader)
			b.ReportAllocs()
			for b.Loop() {
				reader.Reset(body)
				req.Body = io.NopCloser(reader)
				if impl == "hand-pooled" {
					rr, err := handReadRequest(req)
					if err != nil {
						b.Fatal(err)
					}
					handWriteRPC(w, http.StatusOK, rr.ID, tr)
					continue
				}
				rr, rerr := readRequest(req)
				if rerr != nil {
					b.Fatal(errors.New(rerr.Message))
				}
				writeRPC(w, http.StatusOK, rpcResponse{ID: rr.ID, Result: tr})
			}
		})
	}
}
