package sandbox

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The hand-written tool response must decode exactly as encoding/json's
// encoding of the same response would.
func TestAppendToolResponseMatchesEncodingJSON(t *testing.T) {
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
			fast, ok := appendToolResponse(nil, id, tr)
			if !ok {
				t.Fatal("fast path refused a tool result")
			}
			slow, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Result: tr})
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			if err := json.Unmarshal(fast, &a); err != nil {
				t.Fatalf("value %d: fast path wrote invalid JSON: %v\n%s", i, err, fast)
			}
			if err := json.Unmarshal(slow, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("value %d: fast path differs:\n fast %s\n json %s", i, fast, slow)
			}
		}
	}
}
