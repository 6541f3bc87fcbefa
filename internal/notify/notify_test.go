package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/notify/snsfake"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// hostile is an operator's reason that tries every trick a chat offers.
const hostile = "<!channel> @here see <http://evil.example|the runbook> *now* & `rm -rf` [x](http://evil.example) <@U123>"

var epoch = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

func event() notify.Event {
	exp := epoch.Add(30 * time.Minute)
	return notify.Event{Action: "breaker.force-open", Actor: "alice <!here>", Reason: hostile,
		Levers: []notify.Lever{{Subject: "breaker#openai", Change: "forced open", ExpiresAt: &exp, AuditID: "a1"},
			{Subject: "breaker#core-api", Change: "forced open", ExpiresAt: &exp, AuditID: "a2"}}}
}

// slackSafe fails when text holds a character Slack parses: a raw < or >,
// or an & that does not start one of the three escapes.
func slackSafe(t *testing.T, text string) {
	t.Helper()
	if strings.ContainsAny(text, "<>") {
		t.Fatalf("raw < or > reaches Slack (a mention or link would be parsed):\n%s", text)
	}
	if loose := regexp.MustCompile(`&(?:amp;|lt;|gt;)?`).FindAllString(text, -1); len(loose) > 0 {
		for _, m := range loose {
			if m == "&" {
				t.Fatalf("a bare & reaches Slack:\n%s", text)
			}
		}
	}
}

type recorder struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (r *recorder) Append(_ context.Context, e audit.Entry) (audit.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	return audit.Record{ID: fmt.Sprintf("rec%d", len(r.entries))}, nil
}

// Stage is never called: notifications record lone entries.
func (r *recorder) Stage(context.Context, audit.Entry, string, int) (audit.Record, store.Op, error) {
	return audit.Record{}, store.Op{}, errors.New("a notification stages no change")
}

func TestSlackMessageEscapesHostileTextAndAsksForNoParsing(t *testing.T) {
	rcv := notifytest.Start(t, notifytest.Accept)
	d := &notify.Dispatcher{Context: "prod", Source: notify.SourceCLI, Clock: clocktest.NewFake(epoch),
		Sinks: []notify.Sink{&notify.Webhook{SinkName: "chat", URL: rcv.URL(), Format: notify.FormatSlack}}}
	rep := d.Notify(t.Context(), event())
	if len(rep.Failed) != 0 || len(rep.Delivered) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	texts := rcv.SlackTexts(t)
	if len(texts) != 1 {
		t.Fatalf("got %d messages, want 1", len(texts))
	}
	text := texts[0]
	slackSafe(t, text)
	for _, want := range []string{
		"&lt;!channel&gt; @here see &lt;http://evil.example|the runbook&gt; *now* &amp; `rm -rf`",
		"&lt;@U123&gt;", "alice &lt;!here&gt;", "[prod]", "breaker#openai forced open, expires 2026-11-29T19:30:00Z",
		"Audit records: a1, a2", "Context: prod (from the cli)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("message lacks %q:\n%s", want, text)
		}
	}
}

func TestPayloadIsTheContractWithValuesAsRecorded(t *testing.T) {
	rcv := notifytest.Start(t, notifytest.Accept)
	d := &notify.Dispatcher{Context: "prod", Source: notify.SourceCLI, Clock: clocktest.NewFake(epoch),
		Sinks: []notify.Sink{&notify.Webhook{SinkName: "hook", URL: rcv.URL()}}}
	d.Notify(t.Context(), event())
	evs := rcv.Events(t)
	if len(evs) != 1 {
		t.Fatalf("got %d events", len(evs))
	}
	ev := evs[0]
	if ev.Kind != notify.Kind || ev.Version != notify.Version || ev.Context != "prod" || ev.Source != "cli" || ev.Reason != hostile ||
		len(ev.ID) != 16 || !ev.Time.Equal(epoch) || strings.Join(ev.AuditIDs, ",") != "a1,a2" || len(ev.Levers) != 2 {
		t.Fatalf("event = %+v", ev)
	}
	if got := rcv.Requests()[0].Path; got != notifytest.Token {
		t.Fatalf("posted to %q", got)
	}
}

func TestRedactURLKeepsSchemeAndHostOnly(t *testing.T) {
	for in, want := range map[string]string{ //nolint:gosec // G101: made-up webhook URLs, the values under test
		"https://hooks.slack.com/services/T0/B0/xyz": "https://hooks.slack.com/…",
		"https://example.com/hook?token=abc":         "https://example.com/…",
		"https://example.com":                        "https://example.com",
		"http://127.0.0.1:8080/x#frag":               "http://127.0.0.1:8080/…",
		"https://user:pw@example.com/x":              "https://example.com/…",
		"not a url":                                  "(invalid URL)",
	} {
		if got := notify.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWebhookErrorsNeverHoldTheToken(t *testing.T) {
	rcv := notifytest.Start(t, notifytest.Refuse)
	closed := httptest.NewServer(nil)
	closedURL := closed.URL + notifytest.Token
	closed.Close()
	for _, u := range []string{rcv.URL(), closedURL} {
		w := &notify.Webhook{SinkName: "hook", URL: u}
		err := w.Send(t.Context(), event())
		if err == nil {
			t.Fatalf("%s: send succeeded", w.Target())
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(w.Target(), "SECRET") {
			t.Fatalf("the token leaks: target %q, error %q", w.Target(), err)
		}
	}
}

func TestAHangingReceiverDelaysNothingPastTheBound(t *testing.T) {
	hang := notifytest.Start(t, notifytest.Hang)
	ok := notifytest.Start(t, notifytest.Accept)
	clk := clocktest.NewFake(epoch)
	rec := &recorder{}
	var warns []string
	debug := &syncbuf.Buffer{}
	d := &notify.Dispatcher{Context: "prod", Clock: clk, Timeout: 5 * time.Second, Audit: rec, Debug: debug,
		Warn: func(l string) { warns = append(warns, l) },
		Sinks: []notify.Sink{
			&notify.Webhook{SinkName: "stuck", URL: hang.URL()},
			&notify.Webhook{SinkName: "fine", URL: ok.URL()},
		}}
	done := make(chan notify.Report, 1)
	go func() { done <- d.Notify(context.Background(), event()) }()
	hang.WaitRequest(t)
	ok.WaitRequest(t)
	wait.Until(t, "the dispatcher to wait on its clock, with the fine sink delivered", func() bool {
		return clk.Waiters() > 0 && strings.Contains(debug.String(), "fine (webhook")
	})
	select {
	case <-done:
		t.Fatal("Notify returned before the bound, with a sink still sending")
	default:
	}
	clk.Advance(5 * time.Second)
	var rep notify.Report
	select {
	case rep = <-done:
	case <-time.After(wait.Ceiling):
		t.Fatal("Notify did not return at the bound")
	}
	if len(rep.Delivered) != 1 || rep.Delivered[0] != "fine" || len(rep.Failed) != 1 || rep.Failed[0].Sink != "stuck" ||
		!strings.Contains(rep.Failed[0].Error, "no answer within 5s") {
		t.Fatalf("report = %+v", rep)
	}
	if !strings.Contains(debug.String(), "fine (webhook http://127.0.0.1:") || strings.Contains(debug.String(), "SECRET") {
		t.Fatalf("debug = %q", debug.String())
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "stuck") || strings.Contains(warns[0], "SECRET") || strings.Contains(warns[0], "\n") {
		t.Fatalf("warnings = %q", warns)
	}
	if len(rec.entries) != 1 || rec.entries[0].Action != notify.ActionFailed || rec.entries[0].Outcome != "failed" {
		t.Fatalf("audit = %+v", rec.entries)
	}
	b, _ := json.Marshal(rec.entries[0].After)
	if !strings.Contains(string(b), `"audit_ids":["a1","a2"]`) || strings.Contains(string(b), "SECRET") {
		t.Fatalf("failure record = %s", b)
	}
}

func TestNoSinksNoWork(t *testing.T) {
	var d *notify.Dispatcher
	if rep := d.Notify(t.Context(), event()); rep.Event.ID != "" {
		t.Fatalf("a nil dispatcher sent %+v", rep)
	}
}

func snsClient(url string) *sns.Client {
	return sns.New(sns.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

const topic = "arn:aws:sns:us-east-1:123456789012:incidents"

func TestSNSMessageIsAChatbotNotificationWithinTheServiceLimits(t *testing.T) {
	fake := snsfake.Start(t, topic)
	sink := &notify.SNS{SinkName: "pager", TopicARN: topic, Client: func(context.Context) (notify.Publisher, error) { return snsClient(fake.URL()), nil }}
	ev := event()
	ev.Actor = "Zoë\u00a0Ops <!here>" // not ASCII: the subject must say it in ASCII
	big := ev
	for i := range 5000 {
		big.Levers = append(big.Levers, notify.Lever{Subject: "rl#client-" + strings.Repeat("x", 40) + string(rune('a'+i%26)), Change: "drained to 0 tokens"})
	}
	d := &notify.Dispatcher{Context: "prod", Clock: clocktest.NewFake(epoch), Sinks: []notify.Sink{sink}}
	for _, e := range []notify.Event{ev, big} {
		if rep := d.Notify(t.Context(), e); len(rep.Failed) != 0 {
			t.Fatalf("publish failed: %+v", rep.Failed)
		}
	}
	msgs := fake.Messages()
	if len(msgs) != 2 {
		t.Fatalf("fake got %d messages", len(msgs))
	}
	for _, m := range msgs {
		var cb struct {
			Version, Source string
			Content         struct{ TextType, Title, Description string }
		}
		if err := json.Unmarshal([]byte(m.Message), &cb); err != nil {
			t.Fatal(err)
		}
		if cb.Version != "1.0" || cb.Source != "custom" || cb.Content.TextType != "client-markdown" {
			t.Fatalf("not a Chatbot custom notification: %s", m.Message[:200])
		}
		slackSafe(t, cb.Content.Title+"\n"+cb.Content.Description)
		slackSafe(t, m.Subject)
		if !strings.HasPrefix(m.Subject, "[prod] breaker.force-open by Zo??Ops &lt;!here&gt;") || len(m.Subject) >= 100 {
			t.Fatalf("subject %q", m.Subject)
		}
		if m.Attributes[notify.AttrContext].StringValue != "prod" || m.Attributes[notify.AttrAction].StringValue != "breaker.force-open" {
			t.Fatalf("attributes %+v", m.Attributes)
		}
	}
	if d := msgs[1]; len(d.Message) > snsfake.MaxMessageBytes || !strings.Contains(d.Message, "more lines left out") {
		t.Fatalf("the big message was not cut to the limit: %d bytes", len(d.Message))
	}
}

// The fake must refuse what SNS refuses, or the test above proves nothing.
func TestSNSFakeEnforcesTheDocumentedLimits(t *testing.T) {
	fake := snsfake.Start(t, topic)
	c := snsClient(fake.URL())
	str := func(v string) sns.PublishInput {
		return sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(v)}
	}
	cases := map[string]sns.PublishInput{}
	in := str(strings.Repeat("x", snsfake.MaxMessageBytes+1))
	cases["too big"] = in
	in = str("x")
	in.Subject = aws.String("line\nbreak")
	cases["subject line break"] = in
	in = str("x")
	in.Subject = aws.String(strings.Repeat("s", 100))
	cases["subject 100 chars"] = in
	in = str("x")
	in.Subject = aws.String("Zoë")
	cases["subject not ascii"] = in
	for name, attr := range map[string]string{"reserved": "AWS.x", "amazon": "amazon.y", "dots": "a..b", "lead": ".a", "chars": "a b"} {
		in = str("x")
		in.MessageAttributes = map[string]snstypes.MessageAttributeValue{attr: {DataType: aws.String("String"), StringValue: aws.String("v")}}
		cases["attribute "+name] = in
	}
	in = str("x")
	in.TopicArn = aws.String("arn:aws:sns:us-east-1:123456789012:nope")
	cases["unknown topic"] = in
	for name, in := range cases {
		if _, err := c.Publish(t.Context(), &in); err == nil {
			t.Errorf("%s: the fake accepted it", name)
		}
	}
	in = str("x")
	in.MessageAttributes = map[string]snstypes.MessageAttributeValue{}
	for i := range 11 {
		in.MessageAttributes["a"+string(rune('a'+i))] = snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	if _, err := c.Publish(t.Context(), &in); err == nil {
		t.Error("11 attributes: the fake accepted them")
	}
	if n := len(fake.Messages()); n != 0 {
		t.Fatalf("the fake recorded %d refused messages", n)
	}
	var nf interface{ ErrorCode() string }
	_, err := c.Publish(t.Context(), &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:123456789012:nope"), Message: aws.String("x")})
	if !errors.As(err, &nf) || nf.ErrorCode() != "NotFound" {
		t.Fatalf("unknown topic: %v", err)
	}
}

// A refusing receiver that echoes the request path (Express's default
// 404 page does) past the bound on what is read of its answer: the cut
// must not leave a prefix of the token that no longer matches the path.
func TestAnEchoedPathCutByTheAnswerBoundLeaksNoPartOfTheToken(t *testing.T) {
	const token = "/services/T0AAAAAAA/B0BBBBBBB/TOKENtokenTOKENtokenTOKEN"
	for pad := 100; pad <= 260; pad++ {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			// Twice: the second copy shifts left once the first is cut out.
			fmt.Fprintf(w, "%s Cannot %s %s %s", strings.Repeat("x", pad), r.Method, r.URL.Path, r.URL.Path) //nolint:gosec // G705: a test receiver echoing the path on purpose, as Express's 404 page does
		}))
		w := &notify.Webhook{SinkName: "hook", URL: srv.URL + token}
		err := w.Send(t.Context(), event())
		srv.Close()
		if err == nil {
			t.Fatalf("pad %d: send succeeded", pad)
		}
		if strings.Contains(err.Error(), "/services/T0A") || strings.Contains(err.Error(), "TOKEN") {
			t.Fatalf("pad %d: part of the token leaks: %q", pad, err)
		}
	}
}

// Issue 35: a refusing receiver that echoes one segment of the URL's path,
// or a query value URL-decoded, put the token in the warning and in the
// notify.failed record (both carry Send's error): only the exact full path
// and raw query were cut. Every segment and value is, escaped or decoded;
// short words that are not tokens stay readable.
func TestAnEchoingReceiverLeaksNoSegmentOrValue(t *testing.T) {
	t.Parallel()
	const (
		segment = "B0BBBBBBB"
		tok     = "TOKENtokenTOKEN"
		raw     = "s3cr%2Ft+v4lue%21x"
		decoded = "s3cr/t v4lue!x"
	)
	echoes := map[string]func(r *http.Request) string{
		"a path segment":        func(*http.Request) string { return "no such team " + segment },
		"the last segment":      func(*http.Request) string { return "invalid_token: " + tok },
		"a decoded query value": func(r *http.Request) string { return "bad key " + r.URL.Query().Get("key") },
		"a raw query value":     func(*http.Request) string { return "bad key " + raw },
		"the value path-decoded": func(*http.Request) string {
			return "bad key s3cr/t+v4lue!x"
		},
	}
	for name, echo := range echoes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, echo(r))
			}))
			defer srv.Close()
			w := &notify.Webhook{SinkName: "hook", URL: srv.URL + "/api/T0AAAAAAA/" + segment + "/" + tok + "?v=1&key=" + raw}
			err := w.Send(t.Context(), event())
			if err == nil {
				t.Fatal("send succeeded")
			}
			for _, secret := range []string{segment, tok, raw, decoded, "s3cr/t+v4lue!x", "s3cr"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%q leaks in %q", secret, err)
				}
			}
			if !strings.Contains(err.Error(), "answered 403 Forbidden: ") || !strings.Contains(err.Error(), "…") {
				t.Errorf("error %q does not say what was answered, with the secret cut", err)
			}
		})
	}
	// Short segments and values are words, not tokens: left as they are.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "api v1 is retired")
	}))
	defer srv.Close()
	err := (&notify.Webhook{SinkName: "hook", URL: srv.URL + "/api/v1/" + tok}).Send(t.Context(), event())
	if err == nil || !strings.Contains(err.Error(), "api v1 is retired") {
		t.Errorf("short words were cut: %v", err)
	}
}

// Issue 35: the SNS Subject carried an actor's "<!channel>" raw, while the
// message escaped it. The subject is escaped by the same rule (EscapeSlack).
func TestSNSSubjectMentionsNobody(t *testing.T) {
	t.Parallel()
	ev := event()
	ev.Actor = "<!channel> <@U123>"
	ev.Reason = "<!here>"
	in, err := notify.SNSPublishInput("arn:aws:sns:eu-west-1:123456789012:kosha", ev)
	if err != nil {
		t.Fatal(err)
	}
	subject := aws.ToString(in.Subject)
	if strings.ContainsAny(subject, "<>") || !strings.Contains(subject, "&lt;!channel&gt;") {
		t.Errorf("subject %q holds a raw mention", subject)
	}
}

// The metadata's additionalContext, which Chatbot may show and a custom
// action substitutes into its command, carries the actor and reason from
// the table escaped like the description: no raw mention, control byte or
// bidi mark.
func TestSNSAdditionalContextIsEscaped(t *testing.T) {
	t.Parallel()
	ev := event()
	ev.Actor = "<!channel>\x1b[31m"
	ev.Reason = "fix \u202e<@U123>\nnext"
	in, err := notify.SNSPublishInput("arn:aws:sns:eu-west-1:123456789012:kosha", ev)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Metadata struct {
			AdditionalContext map[string]string `json:"additionalContext"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(in.Message)), &msg); err != nil {
		t.Fatal(err)
	}
	for k, v := range msg.Metadata.AdditionalContext {
		if strings.ContainsAny(v, "<>\x1b\u202e\n") {
			t.Errorf("additionalContext %s = %q holds a raw mention, control byte or bidi mark", k, v)
		}
	}
	if got := msg.Metadata.AdditionalContext["actor"]; got != `&lt;!channel&gt;\x1b[31m` {
		t.Errorf("actor %q", got)
	}
}

// Issue 46: a force's impact reaches chat as Impact lines, escaped like
// every other value, and the webhook's JSON as the impact array.
func TestImpactLinesReachChatEscapedAndTheWebhookAsRecorded(t *testing.T) {
	chat := notifytest.Start(t, notifytest.Accept)
	hook := notifytest.Start(t, notifytest.Accept)
	d := &notify.Dispatcher{Context: "prod", Source: notify.SourceCLI, Clock: clocktest.NewFake(epoch),
		Sinks: []notify.Sink{&notify.Webhook{SinkName: "chat", URL: chat.URL(), Format: notify.FormatSlack}, &notify.Webhook{SinkName: "hook", URL: hook.URL()}}}
	ev := event()
	ev.Impact = []string{"screen_entity deferred: status: \"deferred\" · 25/min · about 750 screenings deferred over 30m", "tool <!channel> failed"}
	if rep := d.Notify(t.Context(), ev); len(rep.Failed) != 0 {
		t.Fatalf("report = %+v", rep)
	}
	text := chat.SlackTexts(t)[0]
	slackSafe(t, text)
	for _, want := range []string{"Impact: screen_entity deferred: status: \"deferred\" · 25/min · about 750 screenings deferred over 30m",
		"Impact: tool &lt;!channel&gt; failed"} {
		if !strings.Contains(text, want) {
			t.Errorf("message lacks %q:\n%s", want, text)
		}
	}
	if got := hook.Events(t)[0].Impact; len(got) != 2 || got[1] != "tool <!channel> failed" {
		t.Errorf("the webhook's impact %q, want the lines as told", got)
	}
}
