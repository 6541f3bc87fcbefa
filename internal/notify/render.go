package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Payload is the JSON document of docs/contracts/notification.md: what the
// json webhook format posts. Values are as recorded (JSON-escaped, never
// chat-escaped): a receiver that shows them renders them for its target.
func Payload(ev Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode notification: %w", err)
	}
	return b, nil
}

// titleSubjects is how many levers a title names before "and N more".
const titleSubjects = 5

// Title is the notification's one line: context, action, actor and the
// levers' subjects. Plain text: values pass through textsafe.Line only.
func Title(ev Event) string {
	var what string
	switch {
	case ev.Drill != nil:
		what = fmt.Sprintf("drill %s (run %s)", ev.Drill.Name, ev.Drill.RunID)
		if ev.Outcome != "" {
			what += ": " + ev.Outcome
		}
	case len(ev.Levers) > 0:
		subjects := make([]string, 0, titleSubjects+1)
		for i, l := range ev.Levers {
			if i == titleSubjects {
				subjects = append(subjects, fmt.Sprintf("and %d more", len(ev.Levers)-i))
				break
			}
			subjects = append(subjects, l.Subject)
		}
		what = strings.Join(subjects, ", ")
	default:
		what = "nothing changed"
	}
	return textsafe.Line(fmt.Sprintf("[%s] %s by %s: %s", ev.Context, ev.Action, ev.Actor, what))
}

// Lines are the notification's body, one fact a line, plain text (values
// through textsafe.Line). Chat forms escape each line for their target.
func Lines(ev Event) []string {
	ls := []string{
		"Context: " + ev.Context + " (from the " + ev.Source + ")",
		"Actor: " + ev.Actor,
	}
	if ev.Reason != "" {
		ls = append(ls, "Reason: "+ev.Reason)
	}
	if ev.Outcome != "" {
		ls = append(ls, "Outcome: "+ev.Outcome)
	}
	if ev.Detail != "" {
		ls = append(ls, "Detail: "+ev.Detail)
	}
	for _, l := range ev.Impact {
		ls = append(ls, "Impact: "+l)
	}
	for _, l := range ev.Levers {
		line := "Lever: " + l.Subject + " " + l.Change
		if l.ExpiresAt != nil {
			line += ", expires " + l.ExpiresAt.UTC().Format(time.RFC3339)
		}
		ls = append(ls, line)
	}
	if len(ev.AuditIDs) > 0 {
		ls = append(ls, "Audit records: "+strings.Join(ev.AuditIDs, ", "))
	}
	ls = append(ls, "Notification: "+ev.ID+" at "+ev.Time.UTC().Format(time.RFC3339))
	for i := range ls {
		ls[i] = textsafe.Line(ls[i])
	}
	return ls
}

// EscapeSlack escapes text for a Slack message as Slack documents: &, <
// and > become &amp; &lt; &gt;, so "<!channel>", "<@U123>" and
// "<http://x|y>" are shown, never parsed as a mention or a link.
func EscapeSlack(s string) string {
	return slackEscaper.Replace(s)
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackLines are ev's [Lines], each escaped by [EscapeSlack].
func slackLines(ev Event) []string {
	ls := Lines(ev)
	for i := range ls {
		ls[i] = EscapeSlack(ls[i])
	}
	return ls
}

// joinWithin joins lines with sep, keeping the result within limit bytes
// (limit <= 0: no limit); lines that do not fit are replaced by one line
// saying how many were left out (the audit records have them all).
func joinWithin(lines []string, sep string, limit int) string {
	out := strings.Join(lines, sep)
	if limit <= 0 || len(out) <= limit {
		return out
	}
	// size is the length of lines[:keep] joined, plus a separator.
	size := 0
	for keep := 0; keep < len(lines); keep++ {
		tail := leftOut(len(lines) - keep)
		next := size + len(lines[keep]) + len(sep)
		nextTail := leftOut(len(lines) - keep - 1)
		if next+len(nextTail) > limit {
			if size+len(tail) > limit {
				break
			}
			return strings.Join(lines[:keep], sep) + sepIf(keep, sep) + tail
		}
		size = next
	}
	return truncateBytes(out, limit)
}

// leftOut is the line that stands for n lines left out.
func leftOut(n int) string {
	return fmt.Sprintf("… %d more %s left out; see the audit records", n, human.Plural(int64(n), "line"))
}

func sepIf(keep int, sep string) string {
	if keep == 0 {
		return ""
	}
	return sep
}

// truncateBytes cuts s to at most n bytes on a rune boundary.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Slack's documented bounds: a section block's text is at most 3000
// characters; a message's top-level text at most 40,000 (kept far below).
const (
	slackSectionMax = 3000
	slackTextMax    = 500
)

// SlackMessage is the slack webhook format: an incoming-webhook message
// whose fallback text is the title and whose one section holds the lines.
// Every value is escaped by [EscapeSlack]; the text objects are verbatim
// (no automatic links or mentions) and the message asks for no name
// linking, no parsing and no unfurling.
func SlackMessage(ev Event) ([]byte, error) {
	title := EscapeSlack(Title(ev))
	body := joinWithin(slackLines(ev), "\n", slackSectionMax)
	msg := map[string]any{
		"text":         truncateBytes(title, slackTextMax),
		"parse":        "none",
		"link_names":   false,
		"unfurl_links": false,
		"unfurl_media": false,
		"blocks": []any{
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": truncateBytes("koshactl: "+title, slackSectionMax), "verbatim": true}},
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": body, "verbatim": true}},
		},
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode slack message: %w", err)
	}
	return b, nil
}
