package nofollow

import (
	"net/http"
	"net/url"
)

// CheckRedirect is an [http.Client] CheckRedirect that follows nothing:
// the client returns the 3xx response itself.
func CheckRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Client returns a copy of c (a new client when c is nil) that follows no
// redirect; c itself is left as it is, so a client shared with code that
// may follow redirects keeps doing so.
func Client(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	out.CheckRedirect = CheckRedirect
	return &out
}

// Redirected reports whether resp is a redirect, and where it points: the
// Location header resolved against the request's URL ("" when it has none
// or it does not parse).
func Redirected(resp *http.Response) (location string, ok bool) {
	if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.StatusCode == http.StatusNotModified {
		return "", false
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", true
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", true
	}
	if resp.Request != nil && resp.Request.URL != nil {
		u = resp.Request.URL.ResolveReference(u)
	}
	return u.String(), true
}
