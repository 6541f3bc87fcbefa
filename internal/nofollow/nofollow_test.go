package nofollow_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kosha-platform/koshactl/internal/nofollow"
)

func TestClientReturnsTheRedirectItself(t *testing.T) {
	t.Parallel()
	hits := 0
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer elsewhere.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/metrics", http.StatusFound)
	}))
	defer srv.Close()
	shared := &http.Client{}
	get, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := nofollow.Client(shared).Do(get)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, ok := nofollow.Redirected(resp)
	if !ok || loc != elsewhere.URL+"/metrics" || hits != 0 {
		t.Errorf("Redirected = %q, %v; the other server had %d requests", loc, ok, hits)
	}
	if shared.CheckRedirect != nil {
		t.Error("Client changed the client it was given")
	}
	for code, want := range map[int]bool{200: false, 301: true, 304: false, 307: true, 308: true, 404: false} {
		if _, ok := nofollow.Redirected(&http.Response{StatusCode: code, Header: http.Header{}}); ok != want {
			t.Errorf("Redirected(%d) = %v", code, ok)
		}
	}
	// A relative Location is resolved against the request.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1:8787/metrics", nil)
	resp = &http.Response{StatusCode: 302, Header: http.Header{"Location": {"/elsewhere"}}, Request: req}
	if loc, _ := nofollow.Redirected(resp); loc != "http://127.0.0.1:8787/elsewhere" {
		t.Errorf("relative Location = %q", loc)
	}
}
