package audit_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// One bad record never hides the others: each is reported (pk, attribute,
// problem) and the rest are listed.
func TestListReportsUnreadableRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	log, clk, s := openLog(t)
	good, err := log.Append(ctx, audit.Entry{Actor: "a", Action: "breaker.clear", Subject: "breaker#openai", Before: map[string]int{"v": 1}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	ms := clk.Now().UnixMilli()
	base := func(pk string) store.Item {
		return store.Item{store.PK: pk, "time": ms, "actor": "x", "action": "breaker.clear", "subject": "breaker#openai",
			"context": "ctx", "outcome": "ok"}
	}
	noTime := base("audit#0000000000001#aaaa")
	delete(noTime, "time")
	timeS := base("audit#0000000000002#bbbb")
	timeS["time"] = "yesterday"
	time1e20 := base("audit#0000000000003#cccc")
	time1e20["time"] = 1e20
	badBefore := base("audit#0000000000004#dddd")
	badBefore["before"] = "{not json"
	actorN := base("audit#0000000000005#eeee")
	actorN["actor"] = int64(7)
	otherSubject := base("audit#0000000000006#ffff")
	delete(otherSubject, "time")
	otherSubject["subject"] = "rl#x"
	for _, it := range []store.Item{noTime, timeS, time1e20, badBefore, actorN, otherSubject} {
		if err := s.Put(ctx, it, store.Always()); err != nil {
			t.Fatal(err)
		}
	}

	// Records written by hand carry no index attributes: a scan finds them.
	l, err := log.List(ctx, audit.Query{Subject: "breaker#openai", Scan: true})
	if err != nil {
		t.Fatalf("List: %v (one bad record must not fail the listing)", err)
	}
	var ids []string
	for _, r := range l.Records {
		ids = append(ids, r.ID)
	}
	// Listed: the good record, the one with a bad before (without it), the
	// one with a numeric actor (without it).
	if want := []string{"eeee", "dddd", good.ID}; !reflect.DeepEqual(ids, want) {
		t.Errorf("records = %v, want %v", ids, want)
	}
	for _, r := range l.Records {
		if r.ID == "dddd" && r.Before != nil {
			t.Errorf("unreadable before kept: %s", r.Before)
		}
	}
	if _, err := json.Marshal(l.Records); err != nil {
		t.Errorf("records do not encode as JSON: %v", err)
	}
	want := []store.Problem{
		{PK: "audit#0000000000001#aaaa", Attribute: "time", Problem: "found absent, want N, whole epoch milliseconds"},
		{PK: "audit#0000000000002#bbbb", Attribute: "time", Problem: `found S "yesterday", want N, whole epoch milliseconds`},
		{PK: "audit#0000000000003#cccc", Attribute: "time", Problem: "found N 1e+20, want N, whole epoch milliseconds"},
		{PK: "audit#0000000000004#dddd", Attribute: "before", Problem: "found an S that is not a JSON document, want a JSON document (left out)"},
		{PK: "audit#0000000000005#eeee", Attribute: "actor", Problem: "found N 7, want S"},
	}
	if !reflect.DeepEqual(l.Unreadable, want) {
		t.Errorf("unreadable =\n%v\nwant\n%v", l.Unreadable, want)
	}
}
