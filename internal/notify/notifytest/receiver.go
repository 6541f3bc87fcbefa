package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// Token is the secret path of every receiver's URL, as a Slack incoming
// webhook's: tests assert it never appears in output or audit records.
const Token = "/services/T0SECRET/B0SECRET/xoxSECRETtoken"

// Mode says how the receiver answers.
type Mode int

const (
	// Accept answers 200 ok.
	Accept Mode = iota
	// Refuse answers 500 with a body that quotes the request's path (as a
	// careless server might), so a test can check the token is scrubbed.
	Refuse
	// Hang never answers: it waits for the sender to give up.
	Hang
)

// Request is one POST the receiver got.
type Request struct {
	Path string
	Body []byte
}

// Receiver records notifications.
type Receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	mode Mode
	reqs []Request
	got  chan struct{}
}

// Start starts a receiver on 127.0.0.1, closed at the end of the test.
func Start(t testing.TB, mode Mode) *Receiver {
	t.Helper()
	r := &Receiver{mode: mode, got: make(chan struct{}, 64)}
	done := make(chan struct{})
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		r.reqs = append(r.reqs, Request{Path: req.URL.Path, Body: body})
		m := r.mode
		r.mu.Unlock()
		select {
		case r.got <- struct{}{}:
		default: // WaitRequest has signals enough: a sender is never held up by them
		}
		switch m {
		case Refuse:
			http.Error(w, "no_service for "+req.URL.String(), http.StatusInternalServerError)
		case Hang:
			select {
			case <-req.Context().Done():
			case <-done:
			}
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(func() { close(done); r.srv.Close() })
	return r
}

// URL is the receiver's webhook URL, token path included.
func (r *Receiver) URL() string { return r.srv.URL + Token }

// SetMode changes how later requests are answered.
func (r *Receiver) SetMode(m Mode) { r.mu.Lock(); r.mode = m; r.mu.Unlock() }

// Requests returns what was received so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// WaitRequest waits (up to wait.Ceiling) until the receiver has got one
// more request than it had when the test last waited.
func (r *Receiver) WaitRequest(t testing.TB) {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(wait.Ceiling):
		t.Fatal("the webhook receiver got no request")
	}
}

// Events decodes every request as the JSON payload.
func (r *Receiver) Events(t testing.TB) []notify.Event {
	t.Helper()
	var out []notify.Event
	for _, q := range r.Requests() {
		var ev notify.Event
		if err := json.Unmarshal(q.Body, &ev); err != nil {
			t.Fatalf("notification is not the JSON payload: %v\n%s", err, q.Body)
		}
		out = append(out, ev)
	}
	return out
}

// SlackTexts decodes every request as a Slack message and returns each
// message's text fields (top-level text and the blocks' texts), joined.
func (r *Receiver) SlackTexts(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, q := range r.Requests() {
		var m struct {
			Text      string `json:"text"`
			Parse     string `json:"parse"`
			LinkNames *bool  `json:"link_names"`
			Blocks    []struct {
				Text struct {
					Type     string `json:"type"`
					Text     string `json:"text"`
					Verbatim bool   `json:"verbatim"`
				} `json:"text"`
			} `json:"blocks"`
		}
		if err := json.Unmarshal(q.Body, &m); err != nil {
			t.Fatalf("notification is not a Slack message: %v\n%s", err, q.Body)
		}
		if m.Parse != "none" || m.LinkNames == nil || *m.LinkNames {
			t.Fatalf("Slack message asks for parsing (parse %q, link_names %v): %s", m.Parse, m.LinkNames, q.Body)
		}
		s := m.Text
		for _, b := range m.Blocks {
			if b.Text.Type == "mrkdwn" && !b.Text.Verbatim {
				t.Fatalf("a mrkdwn block is not verbatim (Slack would auto-link): %s", q.Body)
			}
			s += "\n" + b.Text.Text
		}
		out = append(out, s)
	}
	return out
}
