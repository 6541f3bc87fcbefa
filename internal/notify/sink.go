package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

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
// redirect (an answer never sends the notification somewhere else).
func NewHTTPClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Name implements [Sink].
func (w *Webhook) Name() string { return w.SinkName }

// Target implements [Sink].
func (w *Webhook) Target() string { return "webhook " + RedactURL(w.URL) }

// Send implements [Sink]: one POST; any 2xx answer is a delivery.
func (w *Webhook) Send(ctx context.Context, ev Event) error {
	var (
		body []byte
		err  error
	)
	if w.Format == FormatSlack {
		body, err = SlackMessage(ev)
	} else {
		body, err = Payload(ev)
	}
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
	c := w.Client
	if c == nil {
		c = NewHTTPClient()
	}
	resp, err := c.Do(req)
	if err != nil {
		return w.scrub(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("answered %s", resp.Status)
		if a := strings.TrimSpace(string(answer)); a != "" {
			msg += ": " + w.scrubText(a)
		}
		return errors.New(msg)
	}
	return nil
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

func (w *Webhook) scrubText(s string) string {
	redacted := RedactURL(w.URL)
	s = strings.ReplaceAll(s, w.URL, redacted)
	if u, err := url.Parse(w.URL); err == nil {
		for _, secret := range []string{u.RawQuery, u.EscapedPath(), u.Path, u.Fragment} {
			if len(secret) > 1 {
				s = strings.ReplaceAll(s, secret, "/…")
			}
		}
	}
	return textsafe.Line(s)
}
