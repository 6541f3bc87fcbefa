package list

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
)

var now = time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC)

// pendingPages are two pages of pending requests (one of them "tampered",
// a value that needs escaping in its reason), the second with an item that
// could not be read.
func pendingPages() []approval.Listing {
	req := func(i int) approval.Request {
		return approval.Request{ID: fmt.Sprintf("req-%d", i), Status: approval.StatusPending, Requester: "alice", Needed: 2,
			CreatedAt: now.Add(-time.Duration(i) * time.Minute), ExpiresAt: now.Add(time.Hour), Approvers: []string{},
			Change: approval.Change{Action: breaker.ActionForceOpen, Targets: []string{"openai"}, Reason: "incident <b>\x1b[31m",
				Params: json.RawMessage(`{"for_seconds":1800}`)}}
	}
	return []approval.Listing{
		{Requests: []approval.Request{req(1), req(2)}},
		{Requests: []approval.Request{req(3)}, Unreadable: []store.Problem{{PK: "request#bad", Problem: "status: not a string"}}},
	}
}

// allPages are pendingPages with decided requests among them, as --all
// lists them.
func allPages() []approval.Listing {
	pages := pendingPages()
	pages[0].Requests[1].Status, pages[0].Requests[1].DecidedBy = approval.StatusDenied, "bob"
	pages[1].Requests[0].Status = approval.StatusApplied
	return pages
}

// reviewPages are two pages of break-glass reviews.
func reviewPages() []approval.Listing {
	rev := func(i int) approval.Review {
		return approval.Review{ID: fmt.Sprintf("rev-%d", i), Action: breaker.ActionForceOpen, Targets: []string{"openai"}, Reason: "fire",
			Actor: "dana", CreatedAt: now.Add(-time.Duration(i) * time.Minute), Status: approval.ReviewOpen}
	}
	return []approval.Listing{{Reviews: []approval.Review{rev(1)}}, {Reviews: []approval.Review{rev(2), rev(3)}}}
}

// whole is the pages as one listing, as request list read it before it
// printed page by page.
func whole(pages []approval.Listing) approval.Listing {
	var l approval.Listing
	for _, p := range pages {
		l.Requests = append(l.Requests, p.Requests...)
		l.Reviews = append(l.Reviews, p.Reviews...)
		l.Unreadable = append(l.Unreadable, p.Unreadable...)
	}
	return l
}

// print prints pages as Run does, and says what stdout held after the
// first page.
func print(t *testing.T, opts *Options, pages []approval.Listing) (afterFirst, out string) {
	t.Helper()
	ios, _, stdout, _ := iostreams.Test()
	p := &printer{ios: ios, opts: opts}
	for i, l := range pages {
		if err := p.page(result(l, opts, now), now); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			afterFirst = stdout.String()
		}
	}
	_ = p.end() // exit 10 with the unreadable item; the output is what is compared
	return afterFirst, stdout.String()
}

// -o json and -o yaml print, page by page, byte for byte the document
// request list printed when it read the whole listing first, and the first
// page's items are out before the second page is read.
func TestPagesPrintTheWholeListingsDocument(t *testing.T) {
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatYAML} {
		for name, c := range map[string]struct {
			opts  Options
			pages []approval.Listing
		}{
			"requests":            {Options{Output: format}, pendingPages()},
			"all":                 {Options{Output: format, All: true}, allPages()},
			"reviews":             {Options{Output: format, Reviews: true}, reviewPages()},
			"none":                {Options{Output: format}, []approval.Listing{{}}},
			"none-but-unreadable": {Options{Output: format}, []approval.Listing{{Unreadable: []store.Problem{{PK: "request#bad", Problem: "bad"}}}}},
		} {
			t.Run(format+"/"+name, func(t *testing.T) {
				var want bytes.Buffer
				if err := cmdutil.PrintStructured(&want, format, result(whole(c.pages), &c.opts, now)); err != nil {
					t.Fatal(err)
				}
				afterFirst, got := print(t, &c.opts, c.pages)
				if got != want.String() {
					t.Fatalf("printed page by page:\n%s\nwant (the whole listing):\n%s", got, want.String())
				}
				if first := c.pages[0]; len(first.Requests)+len(first.Reviews) > 0 {
					id := "req-1"
					if c.opts.Reviews {
						id = "rev-1"
					}
					if !bytes.Contains([]byte(afterFirst), []byte(id)) {
						t.Errorf("after the first page stdout holds %q; want its item %s printed", afterFirst, id)
					}
				}
			})
		}
	}
}

// A table prints as the whole-listing table did (its columns sized by the
// rows), and a long listing's rows are out before the rest is read.
func TestPagesPrintTheTable(t *testing.T) {
	opts := &Options{Output: cmdutil.FormatTable}
	_, got := print(t, opts, pendingPages())
	ios, _, want, _ := iostreams.Test()
	tb := cmdutil.NewTable(ios.Out)
	tb.Header(ios, "REQUEST", "STATUS", "CHANGE", "REQUESTER", "APPROVALS", "EXPIRES")
	for _, r := range result(whole(pendingPages()), opts, now).Requests {
		tb.Row(r.ID, r.Status, r.Summary, r.Requester, "0/2", cmdutil.FormatTime(r.ExpiresAt, now, false))
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if got != want.String() {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want.String())
	}

	var long []approval.Listing
	for p := range 2 {
		var l approval.Listing
		for i := range cmdutil.StreamTableRows {
			r := pendingPages()[0].Requests[0]
			r.ID = fmt.Sprintf("req-%d-%d", p, i)
			l.Requests = append(l.Requests, r)
		}
		long = append(long, l)
	}
	if afterFirst, _ := print(t, opts, long); !bytes.Contains([]byte(afterFirst), []byte("req-0-0")) {
		t.Errorf("a table of %d rows printed nothing before its second page was read", 2*cmdutil.StreamTableRows)
	}
}
