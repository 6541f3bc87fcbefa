package kinds

import (
	"strings"
	"testing"
)

func TestJSONPath(t *testing.T) {
	doc, err := decodeJSON([]byte(`{"result":{"degraded":true,"items":[{"id":7},{"id":8.5}],"a.b":"dots",
		"content":[{"type":"text","text":"{\"status\":\"deferred\",\"n\":3}"}],"nil":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"result.degraded":                    "true",
		"$.result.degraded":                  "true",
		"result.items[0].id":                 "7",
		"result.items[-1].id":                "8.5",
		`result["a.b"]`:                      "dots",
		`result['a.b']`:                      "dots",
		"result.content[0].text|json.status": "deferred",
		"result.content[0].text|json.n":      "3",
		"result.items":                       `[{"id":7},{"id":8.5}]`,
		"result.nil":                         "null",
	} {
		p, err := ParseJSONPath(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		v, ok, err := p.Eval(doc)
		if err != nil || !ok || jsonText(v) != want {
			t.Errorf("%s = %s (found %v, %v), want %s", path, jsonText(v), ok, err, want)
		}
	}
	for _, path := range []string{"result.missing", "result.items[2]", "result.items[-3]", "result.degraded.x", "result.items.id"} {
		p, _ := ParseJSONPath(path)
		if _, ok, err := p.Eval(doc); ok || err != nil {
			t.Errorf("%s should be absent (found %v, %v)", path, ok, err)
		}
	}
	p, _ := ParseJSONPath("result.degraded|json")
	if _, _, err := p.Eval(doc); err == nil || !strings.Contains(err.Error(), "|json applies to a string, found a boolean") {
		t.Errorf("|json on a boolean: %v", err)
	}
	for _, bad := range []string{"", "$", "a..b", "a.", ".a.", "a[", "a[x]", "a[0]b", "a[\"x]"} {
		if _, err := ParseJSONPath(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
