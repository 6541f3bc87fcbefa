package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/nofollow"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Sink delivers a notification to one place.
type Sink interface {
	// Name is the sink's name in the context (for warnings and audit).
	Name() string
	// Target says where it delivers, with no secret in it (a webhook's
	// URL as [RedactURL] shows it, a topic ARN).
	Target() string
	// Send delivers ev, within ctx. Its error holds no secret.
	Send(ctx context.Context, ev Event) error
}

// RedactURL shows a URL without its secret parts: scheme://host/… when it
// has a path, query or fragment (a Slack webhook's token is its path),
// scheme://host otherwise; "(invalid URL)" when it cannot be parsed.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(invalid URL)"
	}
	host := u.Host
	if u.Port() == "" {
		host = u.Hostname()
	}
	out := u.Scheme + "://" + host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		out += "/…"
	}
	return textsafe.Line(out)
}

// Webhook formats.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// maxAnswer bounds how much of a refusing receiver's answer is read into
// the error (Slack answers "invalid_token", "no_service").
const maxAnswer = 200

// Webhook posts each notification to a URL.
type Webhook struct {
	// SinkName names the sink.
	SinkName string
	// URL is the endpoint: a secret, never shown (see [RedactURL]).
	URL string
	// Format is FormatJSON (default) or FormatSlack.
	Format string
	// Client sends the request; nil means [NewHTTPClient].
	Client *http.Client
}

// NewHTTPClient returns the client webhooks post with: it follows no
// redirect (an answer never sends the notification somewhere else; the
// rule is [nofollow.Client]).
func NewHTTPClient() *http.Client {
	return nofollow.Client(nil)
}

// Name implements [Sink].
func (w *Webhook) Name() string { return w.SinkName }

// Target implements [Sink].
func (w *Webhook) Target() string { return "webhook " + RedactURL(w.URL) }

// Send implements [Sink]: one POST; any 2xx answer is a delivery.
func (w *Webhook) Send(ctx context.Context, ev Event) error {
	render := Payload
	if w.Format == FormatSlack {
		render = SlackMessage
	}
	body, err := render(ev)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("build request: the URL is not valid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "koshactl-notify")
	req.Header.Set("X-Kosha-Notification-Id", ev.ID)
	c := NewHTTPClient()
	if w.Client != nil {
		c = nofollow.Client(w.Client)
	}
	resp, err := c.Do(req)
	if err != nil {
		return w.scrub(err)
	}
	defer resp.Body.Close()
	// Read past the bound by the longest secret, so a copy of the URL that
	// starts within the bound is read whole and cut out before the bound
	// applies (cutting first would leave a prefix of the token that no
	// longer matches).
	secrets := w.secrets()
	window := int64(maxAnswer)
	for _, sec := range secrets {
		window = max(window, int64(maxAnswer+len(sec)))
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, window))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("answered %s", resp.Status)
		// Whole copies are cut first: a token that repeats itself
		// ("TOKENtokenTOKEN") ends with a prefix of itself, so a complete
		// copy at the end must not be taken for a cut one.
		a := w.scrubRaw(string(answer))
		if int64(len(answer)) == window {
			a = dropPartialSecret(a, secrets)
		}
		if a = strings.TrimSpace(truncateBytes(a, maxAnswer)); a != "" {
			msg += ": " + textsafe.Line(a)
		}
		return errors.New(msg)
	}
	return nil
}

// dropPartialSecret cuts from the end of s, an answer read up to a bound,
// the longest tail that begins one of secrets (the rest was not read).
func dropPartialSecret(s string, secrets []string) string {
	cut := len(s)
	for _, sec := range secrets {
		for n := min(len(sec)-1, len(s)); n > 0; n-- {
			if strings.HasSuffix(s, sec[:n]) {
				cut = min(cut, len(s)-n)
				break
			}
		}
	}
	return s[:cut]
}

// minSecretPart is the shortest path segment or query value cut out of a
// message on its own: long enough to hold a token, and longer than the
// words ("api", "hooks", "v1") that also appear in ordinary text.
const minSecretPart = 8

// secrets are the parts of the URL no message may hold, longest first:
// the URL itself; its path, query and fragment (a Slack webhook's token is
// its path); and every path segment and query value of at least
// [minSecretPart] bytes, both as written in the URL and decoded, since a
// receiver may echo any one of them, escaped or not.
func (w *Webhook) secrets() []string {
	if w.URL == "" {
		return nil
	}
	out := []string{w.URL}
	u, err := url.Parse(w.URL)
	if err != nil {
		return out
	}
	var parts []string
	add := func(min int, ss ...string) {
		for _, s := range ss {
			if len(s) >= min && !slices.Contains(parts, s) && s != w.URL {
				parts = append(parts, s)
			}
		}
	}
	add(2, u.RawQuery, u.EscapedPath(), u.Path, u.Fragment, u.EscapedFragment())
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		add(minSecretPart, seg)
		if dec, err := url.PathUnescape(seg); err == nil {
			add(minSecretPart, dec)
		}
	}
	for _, pair := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(pair, "=")
		add(minSecretPart, v)
		if dec, err := url.QueryUnescape(v); err == nil {
			add(minSecretPart, dec)
		}
		if dec, err := url.PathUnescape(v); err == nil {
			add(minSecretPart, dec)
		}
	}
	// Longest first: a part inside a longer one is cut with it.
	slices.SortStableFunc(parts, func(a, b string) int { return len(b) - len(a) })
	return append(out, parts...)
}

// scrub turns a transport error into one that cannot carry the URL: a
// *url.Error's URL is dropped, and any remaining copy of the URL, its path
// or its query is cut out.
func (w *Webhook) scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	}
	return errors.New(w.scrubText(err.Error()))
}

func (w *Webhook) scrubText(s string) string { return textsafe.Line(w.scrubRaw(s)) }

// scrubRaw cuts every copy of the URL, its path, query and fragment, and
// of each of its path segments and query values (see secrets), out of s.
func (w *Webhook) scrubRaw(s string) string {
	secrets := w.secrets()
	if len(secrets) == 0 {
		return s
	}
	s = strings.ReplaceAll(s, secrets[0], RedactURL(w.URL))
	for _, secret := range secrets[1:] {
		cut := "…"
		if strings.HasPrefix(secret, "/") {
			cut = "/…"
		}
		s = strings.ReplaceAll(s, secret, cut)
	}
	return s
}
