package list_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// attr is a raw DynamoDB attribute: type letter and text.
type attr = storetest.Attr

// badRecords are written by hand next to koshactl's own records.
var badRecords = []map[string]attr{
	// No time at all.
	{"pk": {Type: "S", Text: "audit#1795978800001#00000000000000aa"}, "actor": {Type: "S", Text: "x"}, "action": {Type: "S", Text: "breaker.clear"},
		"subject": {Type: "S", Text: "breaker#openai"}, "context": {Type: "S", Text: "local"}, "outcome": {Type: "S", Text: "ok"}},
	// A before that is not JSON.
	{"pk": {Type: "S", Text: "audit#1795978800002#00000000000000bb"}, "time": {Type: "N", Text: "1795978800002"}, "actor": {Type: "S", Text: "x"},
		"action": {Type: "S", Text: "breaker.clear"}, "subject": {Type: "S", Text: "breaker#openai"}, "context": {Type: "S", Text: "local"},
		"outcome": {Type: "S", Text: "ok"}, "before": {Type: "S", Text: "{not json"}},
}

var wantUnreadable = []store.Problem{
	{PK: "audit#1795978800001#00000000000000aa", Attribute: "time", Problem: "found absent, want N, whole epoch milliseconds"},
	{PK: "audit#1795978800002#00000000000000bb", Attribute: "before", Problem: "found an S that is not a JSON document, want a JSON document (left out)"},
}

func TestAuditListAroundBadRecordsLocalContext(t *testing.T) {
	t.Parallel()
	testAuditListAroundBadRecords(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) {
		return e.PutRaw
	})
}

func TestAuditListAroundBadRecordsDynamoDBContext(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	testAuditListAroundBadRecords(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) {
		e.UseDynamoDB(endpoint, "kosha-control")
		e.MustRun(0, "store", "init")
		return func(attrs map[string]attr) { storetest.PutRawDynamoDB(t, client, "kosha-control", attrs) }
	})
}

func testAuditListAroundBadRecords(t *testing.T, setup func(t *testing.T, e *clitest.Env) func(map[string]attr)) {
	e := clitest.New(t, clitest.Parallel())
	write := setup(t, e)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	for _, r := range badRecords {
		write(r)
	}
	type listOut struct {
		Items []struct {
			ID     string          `json:"id"`
			Action string          `json:"action"`
			Before json.RawMessage `json:"before"`
		} `json:"items"`
		Unreadable []store.Problem `json:"unreadable"`
	}
	for _, format := range []string{"json", "yaml"} {
		r := e.MustRun(exitcode.Partial, "audit", "list", "--scan", "-o", format)
		if !strings.Contains(r.Stderr, `partial listing: 2 audit records do not follow the contract (listed under "unreadable")`) {
			t.Errorf("-o %s stderr: %q", format, r.Stderr)
		}
		if format == "yaml" {
			if !strings.Contains(r.Stdout, "unreadable:") || !strings.Contains(r.Stdout, "pk: audit#1795978800001#00000000000000aa") {
				t.Errorf("-o yaml has no unreadable list:\n%s", r.Stdout)
			}
			continue
		}
		out := clitest.Decode[listOut](t, r.Stdout)
		if len(out.Items) != 2 || out.Items[0].ID != "00000000000000bb" || out.Items[0].Before != nil || out.Items[1].Action != "breaker.force-open" {
			t.Errorf("items = %+v", out.Items)
		}
		if !reflect.DeepEqual(out.Unreadable, wantUnreadable) {
			t.Errorf("unreadable = %+v, want %+v", out.Unreadable, wantUnreadable)
		}
	}
	// Records written by hand carry no index attributes: the indexed
	// listing shows koshactl's own record and is not disturbed by them.
	if r := e.MustRun(0, "audit", "list"); !strings.Contains(r.Stdout, "provider incident") || r.Stderr != "" {
		t.Errorf("indexed listing beside hand-written records: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	// Every filter of the scan still lists what can be read.
	for _, args := range [][]string{{}, {"--subject", "breaker#openai"}, {"--action", "breaker.clear"}, {"--since", "1h"}, {"--limit", "1"}} {
		r := e.MustRun(exitcode.Partial, append([]string{"audit", "list", "--scan"}, args...)...)
		if !strings.Contains(r.Stdout, "breaker.clear") {
			t.Errorf("audit list %v lost the readable record:\n%s", args, r.Stdout)
		}
		for _, p := range wantUnreadable {
			if !strings.Contains(r.Stderr, "warning: "+p.Error()+"\n") {
				t.Errorf("audit list %v stderr lacks %q:\n%s", args, p.Error(), r.Stderr)
			}
		}
	}
	// A filter that rules a bad record out by its readable fields leaves it unreported.
	r := e.MustRun(0, "audit", "list", "--scan", "--subject", "rl#*")
	if r.Stderr != "" || !strings.Contains(r.Stdout, "No audit records match") {
		t.Errorf("filtered out: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	if r = e.MustRun(0, "audit", "list", "--scan", "--action", "breaker.force-open"); r.Stderr != "" || !strings.Contains(r.Stdout, "provider incident") {
		t.Errorf("filtered out: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

// A data-plane record (audit#dp#, which the data plane's role may write)
// is marked as the data plane's in every output: in a table, a "breaker
// clear by alice" it wrote never reads like alice's clear.
func TestDataPlaneRecordsAreMarkedInTables(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	e.PutRaw(map[string]attr{"pk": {Type: "S", Text: "audit#dp#1795978800001#00000000000000dd"}, "time": {Type: "N", Text: "1795978800001"},
		"actor": {Type: "S", Text: "arn:aws:iam::123456789012:user/alice"}, "action": {Type: "S", Text: "breaker.clear"},
		"subject": {Type: "S", Text: "breaker#openai"}, "context": {Type: "S", Text: "local"}, "outcome": {Type: "S", Text: "ok"},
		"reason": {Type: "S", Text: "provider recovered"}})
	out := e.MustRun(0, "audit", "list", "--scan").Stdout
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "breaker.clear") && !strings.Contains(l, "arn:aws:iam::123456789012:user/alice (data plane)") ||
			strings.Contains(l, "breaker.force-open") && strings.Contains(l, "data plane") {
			t.Errorf("the data plane's record is not marked, or an operator's is, in the table:\n%s", out)
		}
	}
}
