package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// SNS Publish's documented limits.
const (
	// SNSMaxMessageBytes bounds a message: its body and every attribute's
	// name, type and value together, 256 KB (262,144 bytes).
	SNSMaxMessageBytes = 262144
	// SNSMaxSubjectChars: a subject is "less than 100 characters", with no
	// line breaks or control characters (ASCII for email subscribers).
	SNSMaxSubjectChars = 99
	// SNSMaxAttributes: at most 10 message attributes reach a raw-delivery
	// SQS subscriber.
	SNSMaxAttributes = 10
)

// Message attributes koshactl sets on every SNS notification, for
// subscription filter policies (route prod to the pager, drills to chat).
const (
	AttrAction  = "koshactl.action"
	AttrContext = "koshactl.context"
	AttrSource  = "koshactl.source"
)

// Publisher publishes to an SNS topic; *sns.Client implements it.
type Publisher interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

var _ Publisher = (*sns.Client)(nil)

// SNS publishes each notification to a topic.
type SNS struct {
	// SinkName names the sink in warnings and audit records.
	SinkName string
	// TopicARN is the topic (not a secret: it is shown).
	TopicARN string
	// Client builds the SNS client on first use (the context's AWS
	// configuration in the topic's region).
	Client func(ctx context.Context) (Publisher, error)
}

// Name implements [Sink].
func (s *SNS) Name() string { return s.SinkName }

// Target implements [Sink].
func (s *SNS) Target() string { return "sns " + s.TopicARN }

// Send implements [Sink]: one Publish call.
func (s *SNS) Send(ctx context.Context, ev Event) error {
	in, err := SNSPublishInput(s.TopicARN, ev)
	if err != nil {
		return err
	}
	c, err := s.Client(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Publish(ctx, in); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// chatbotMessage is an AWS Chatbot (Amazon Q Developer in chat
// applications) custom notification: Chatbot posts the title and the
// client-markdown description to Slack, Teams or Chime; other subscribers
// (email, HTTPS to a pager, Lambda) get the same JSON, whose
// metadata.additionalContext holds the event's fields.
type chatbotMessage struct {
	Version string         `json:"version"`
	Source  string         `json:"source"`
	ID      string         `json:"id"`
	Content chatbotContent `json:"content"`
	Meta    chatbotMeta    `json:"metadata"`
}

type chatbotContent struct {
	TextType    string   `json:"textType"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Keywords    []string `json:"keywords,omitempty"`
}

type chatbotMeta struct {
	ThreadID          string            `json:"threadId,omitempty"`
	Summary           string            `json:"summary"`
	EventType         string            `json:"eventType"`
	AdditionalContext map[string]string `json:"additionalContext"`
}

// chatValues escapes m's values as the description's lines are: Chatbot
// may show additionalContext in a chat, and a custom action substitutes
// its variables into a command (an actor or reason from the table is
// never a raw mention, control byte or markup there).
func chatValues(m map[string]string) map[string]string {
	for k, v := range m {
		m[k] = EscapeSlack(textsafe.Line(v))
	}
	return m
}

// SNSPublishInput is the Publish request for ev: a Chatbot custom
// notification (values escaped as Slack documents, since Chatbot renders
// client-markdown in Slack), an ASCII subject under 100 characters (escaped
// the same way: a subscriber may post it to a chat, so an actor's
// "<!channel>" is shown, never a mention), and the
// three routing attributes; the whole within SNSMaxMessageBytes (lever lines
// that do not fit are counted, not sent).
func SNSPublishInput(topic string, ev Event) (*sns.PublishInput, error) {
	attrs := map[string]types.MessageAttributeValue{
		AttrAction:  {DataType: aws.String("String"), StringValue: aws.String(ev.Action)},
		AttrContext: {DataType: aws.String("String"), StringValue: aws.String(ev.Context)},
		AttrSource:  {DataType: aws.String("String"), StringValue: aws.String(ev.Source)},
	}
	attrBytes := 0
	for k, v := range attrs {
		if *v.StringValue == "" {
			delete(attrs, k) // SNS refuses an attribute without a value
			continue
		}
		attrBytes += len(k) + len(*v.DataType) + len(*v.StringValue)
	}
	title := Title(ev)
	lines := slackLines(ev)
	msg := chatbotMessage{Version: "1.0", Source: "custom", ID: ev.ID,
		Content: chatbotContent{TextType: "client-markdown", Title: EscapeSlack(title), Keywords: []string{ev.Context, ev.Action}},
		Meta: chatbotMeta{Summary: EscapeSlack(title), EventType: ev.Action, AdditionalContext: chatValues(map[string]string{
			"context": ev.Context, "actor": ev.Actor, "reason": ev.Reason, "source": ev.Source,
			"audit_ids": strings.Join(ev.AuditIDs, ","), "notification_id": ev.ID})}}
	if ev.Drill != nil {
		msg.Meta.ThreadID = "drill-" + ev.Drill.RunID
	}
	budget := SNSMaxMessageBytes - attrBytes
	var body []byte
	for limit := budget; limit > 0; limit = limit * 3 / 4 {
		msg.Content.Description = joinWithin(lines, "\n", limit)
		b, err := json.Marshal(msg)
		if err != nil {
			return nil, fmt.Errorf("encode sns message: %w", err)
		}
		if len(b) <= budget {
			body = b
			break
		}
	}
	if body == nil {
		return nil, fmt.Errorf("encode sns message: does not fit in %d bytes", SNSMaxMessageBytes)
	}
	return &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(string(body)),
		Subject: aws.String(SNSSubject(EscapeSlack(title))), MessageAttributes: attrs}, nil
}

// SNSSubject makes a valid SNS subject of s: printable ASCII only (others
// become '?'), no line breaks, under 100 characters.
func SNSSubject(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == SNSMaxSubjectChars {
			break
		}
		if r < 0x20 || r > 0x7e {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
