package breaker_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Issue 21: one attribute of a type beyond S and N (a note of type BOOL, an
// M, an SS, written by another tool) hid every item of its kind. Items
// holding one of every DynamoDB type sit next to valid ones; every command
// keeps working and shows them all.
func TestAttributesOfEveryTypeLocalContext(t *testing.T) {
	t.Parallel()
	testAttributesOfEveryType(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) { return e.PutRaw })
}

func TestAttributesOfEveryTypeDynamoDBContext(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	testAttributesOfEveryType(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) {
		e.UseDynamoDB(endpoint, "every-type")
		e.MustRun(0, "store", "init")
		return func(attrs map[string]attr) { storetest.PutRawDynamoDB(t, client, "every-type", attrs) }
	})
}

// withEveryType adds one attribute of each DynamoDB type to attrs.
func withEveryType(attrs map[string]attr) map[string]attr {
	for k, v := range storetest.EveryType {
		attrs[k] = v
	}
	return attrs
}

func testAttributesOfEveryType(t *testing.T, setup func(t *testing.T, e *clitest.Env) func(map[string]attr)) {
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "kosha_breaker_state{dependency=\"openai\",instance=\"gw-1\"} 3\n"+
			"kosha_breaker_state{dependency=\"core-api\",instance=\"gw-1\"} 3\n")
	}))
	t.Cleanup(metrics.Close)
	e := clitest.New(t, clitest.Parallel())
	write := setup(t, e)
	e.MustRun(0, "breaker", "force-open", "core-api", "--reason", "valid one", "--for", "30m")
	odd := withEveryType(hostileItem(map[string]attr{"note": {Type: "BOOL", Text: "true"}}))
	write(odd)

	r := e.MustRun(0, "breaker", "list")
	if !strings.Contains(r.Stdout, "openai") || !strings.Contains(r.Stdout, "core-api") || strings.Contains(r.Stdout, "malformed") {
		t.Errorf("breaker list does not show both overrides, well-formed:\n%s\n%s", r.Stdout, r.Stderr)
	}
	e.MustRun(0, "breaker", "list", "--scan")
	if r = e.MustRun(0, "breaker", "get", "openai"); !strings.Contains(r.Stdout, "provider incident") {
		t.Errorf("breaker get:\n%s", r.Stdout)
	}
	r = e.MustRun(0, "breaker", "status", "--metrics-url", metrics.URL+"/metrics", "-o", "json")
	var status struct {
		Items []struct {
			Dependency string          `json:"dependency"`
			Override   json.RawMessage `json:"override"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &status); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, r.Stdout)
	}
	overrides := 0
	for _, it := range status.Items {
		if len(it.Override) > 0 && string(it.Override) != "null" {
			overrides++
		}
	}
	if overrides != 2 {
		t.Errorf("breaker status shows %d overrides, want 2:\n%s", overrides, r.Stdout)
	}

	// Cleared and replaced in one command each, the before-images whole.
	if r = e.MustRun(0, "breaker", "clear", "openai"); !strings.Contains(r.Stdout, "Cleared override on openai set by alice@laptop") {
		t.Errorf("clear: %s", r.Stdout)
	}
	write(odd)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "mine now", "--for", "10m", "--overwrite")
	recs := clitest.Decode[struct {
		Items []struct {
			Action  string          `json:"action"`
			Subject string          `json:"subject"`
			Before  json.RawMessage `json:"before"`
		} `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "--subject", "breaker#openai", "-o", "json").Stdout)
	if len(recs.Items) != 2 {
		t.Fatalf("audit: %+v", recs)
	}
	for _, rec := range recs.Items {
		var before map[string]json.RawMessage
		if err := json.Unmarshal(rec.Before, &before); err != nil {
			t.Fatalf("%s before: %v", rec.Action, err)
		}
		if compact(before["note"]) != `{"BOOL":true}` || compact(before["t_null"]) != `{"NULL":true}` || len(before) != len(odd)-1 {
			t.Errorf("%s before = %s, want every stored attribute, note as {\"BOOL\":true}", rec.Action, rec.Before)
		}
	}

	// An audit record with an SS attribute, a bucket with an M one.
	write(withEveryType(map[string]attr{"pk": {Type: "S", Text: "audit#1795978800001#00000000000000aa"},
		"time": {Type: "N", Text: "1795978800001"}, "actor": {Type: "S", Text: "x"}, "action": {Type: "S", Text: "breaker.clear"},
		"subject": {Type: "S", Text: "breaker#other"}, "context": {Type: "S", Text: "local"}, "outcome": {Type: "S", Text: "ok"},
		"ix_audit_day": {Type: "S", Text: "2026-11-29"}, "ix_audit_subject": {Type: "S", Text: "breaker#other"},
		"ix_audit_actor": {Type: "S", Text: "x"}, "ix_list": {Type: "S", Text: "audit#0"}, "ix_list_sort": {Type: "S", Text: "1795978800001#00000000000000aa"}}))
	for _, args := range [][]string{{"audit", "list"}, {"audit", "list", "--scan"}} {
		if r = e.MustRun(0, args...); !strings.Contains(r.Stdout, "breaker#other") || !strings.Contains(r.Stdout, "mine now") {
			t.Errorf("%v:\n%s\n%s", args, r.Stdout, r.Stderr)
		}
	}
	write(withEveryType(map[string]attr{"pk": {Type: "S", Text: "rl#odd"}, "tokens": {Type: "N", Text: "3"},
		"updated_at": {Type: "N", Text: fmt.Sprint(clitest.Epoch.UnixMilli())}}))
	e.MustRun(0, "ratelimit", "set", "--create", "plain", "--tokens", "5")
	if r = e.MustRun(0, "ratelimit", "list"); !strings.Contains(r.Stdout, "odd") || !strings.Contains(r.Stdout, "plain") {
		t.Errorf("ratelimit list:\n%s\n%s", r.Stdout, r.Stderr)
	}
	if r = e.MustRun(0, "ratelimit", "get", "odd"); !strings.Contains(r.Stdout, "3") {
		t.Errorf("ratelimit get:\n%s", r.Stdout)
	}
	e.MustRun(0, "ratelimit", "reset", "odd", "--reason", "cleanup")
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return err.Error()
	}
	return b.String()
}
