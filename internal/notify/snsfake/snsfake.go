package snsfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Documented limits of Publish.
const (
	MaxMessageBytes  = 262144
	MaxSubjectChars  = 99
	MaxAttributes    = 10
	MaxAttrNameChars = 256
	MaxDataTypeBytes = 256
)

// Attribute is one message attribute as received.
type Attribute struct {
	DataType, StringValue string
}

// Message is one accepted Publish.
type Message struct {
	TopicArn   string
	Subject    string
	Message    string
	Attributes map[string]Attribute
	MessageID  string
}

// Server is the fake.
type Server struct {
	// Authorize, when set, is asked before each Publish, as IAM would be:
	// a non-empty answer is the AccessDenied message, sent as SNS's
	// AuthorizationError (403). Set it before the first request.
	Authorize func(action, resource string, context map[string][]string) (denied string)

	srv    *httptest.Server
	mu     sync.Mutex
	topics map[string]bool
	msgs   []Message
	// refusals counts refused requests, by error code.
	refusals map[string]int
}

// Start runs the fake with the given topics, closed at the end of the test.
func Start(t testing.TB, topics ...string) *Server {
	t.Helper()
	s := &Server{topics: map[string]bool{}, refusals: map[string]int{}}
	for _, tp := range topics {
		s.topics[tp] = true
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the endpoint to point the SNS client at.
func (s *Server) URL() string { return s.srv.URL }

// Messages returns the accepted messages.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Refusals returns how many requests were refused with code.
func (s *Server) Refusals(code string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusals[code]
}

type apiError struct {
	status int
	code   string
	msg    string
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		writeError(w, apiError{400, "InvalidParameter", "expected a form-encoded POST"})
		return
	}
	if a := r.PostForm.Get("Action"); a != "Publish" {
		writeError(w, apiError{400, "InvalidAction", fmt.Sprintf("the fake serves Publish only, not %q", a)})
		return
	}
	if s.Authorize != nil {
		if msg := s.Authorize("sns:Publish", r.PostForm.Get("TopicArn"), nil); msg != "" {
			s.mu.Lock()
			s.refusals["AuthorizationError"]++
			s.mu.Unlock()
			writeError(w, apiError{403, "AuthorizationError", msg})
			return
		}
	}
	m, aerr := s.publish(r.PostForm)
	if aerr != nil {
		s.mu.Lock()
		s.refusals[aerr.code]++
		s.mu.Unlock()
		writeError(w, *aerr)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>%s</MessageId></PublishResult>`+
		`<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></PublishResponse>`, m.MessageID, newID())
}

var (
	attrNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	dataTypeRE = regexp.MustCompile(`^(String|String\.Array|Number|Binary)(\.[A-Za-z0-9_.-]+)?$`)
)

func (s *Server) publish(form url.Values) (Message, *apiError) {
	bad := func(format string, args ...any) (Message, *apiError) {
		return Message{}, &apiError{400, "InvalidParameter", fmt.Sprintf(format, args...)}
	}
	m := Message{TopicArn: form.Get("TopicArn"), Subject: form.Get("Subject"), Message: form.Get("Message"), Attributes: map[string]Attribute{}}
	s.mu.Lock()
	known := s.topics[m.TopicArn]
	s.mu.Unlock()
	if !known {
		return Message{}, &apiError{404, "NotFound", "Topic does not exist"}
	}
	if m.Message == "" {
		return bad("Invalid parameter: Empty message")
	}
	if !utf8.ValidString(m.Message) {
		return bad("Invalid parameter: Message must be UTF-8")
	}
	if _, given := form["Subject"]; given {
		switch {
		case m.Subject == "":
			return bad("Invalid parameter: Subject must not be empty")
		case utf8.RuneCountInString(m.Subject) > MaxSubjectChars:
			return bad("Invalid parameter: Subject must be less than 100 characters")
		}
		for _, c := range m.Subject {
			if c < 0x20 || c > 0x7e {
				return bad("Invalid parameter: Subject must be ASCII text without line breaks or control characters")
			}
		}
	}
	size := len(m.Message)
	for i := 1; ; i++ {
		p := fmt.Sprintf("MessageAttributes.entry.%d.", i)
		name, ok := form[p+"Name"]
		if !ok {
			break
		}
		if i > MaxAttributes {
			return bad("Invalid parameter: Too many message attributes (at most %d)", MaxAttributes)
		}
		n := name[0]
		lower := strings.ToLower(n)
		switch {
		case n == "" || utf8.RuneCountInString(n) > MaxAttrNameChars || !attrNameRE.MatchString(n):
			return bad("Invalid parameter: Message attribute name %q: 1-256 characters of A-Z a-z 0-9 _ - .", n)
		case strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".") || strings.Contains(n, ".."):
			return bad("Invalid parameter: Message attribute name %q must not start or end with a period or hold two in a row", n)
		case strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon."):
			return bad("Invalid parameter: Message attribute name %q uses a reserved prefix", n)
		}
		if _, dup := m.Attributes[n]; dup {
			return bad("Invalid parameter: Message attribute name %q is repeated", n)
		}
		dt := form.Get(p + "Value.DataType")
		if len(dt) > MaxDataTypeBytes || !dataTypeRE.MatchString(dt) {
			return bad("Invalid parameter: Message attribute %q has an invalid data type %q", n, dt)
		}
		sv, bv := form.Get(p+"Value.StringValue"), form.Get(p+"Value.BinaryValue")
		if sv == "" && bv == "" {
			return bad("Invalid parameter: Message attribute %q has no value", n)
		}
		if strings.HasPrefix(dt, "Number") {
			if _, err := strconv.ParseFloat(sv, 64); err != nil {
				return bad("Invalid parameter: Message attribute %q: %q is not a number", n, sv)
			}
		}
		m.Attributes[n] = Attribute{DataType: dt, StringValue: sv}
		size += len(n) + len(dt) + len(sv) + len(bv)
	}
	if size > MaxMessageBytes {
		return bad("Invalid parameter: Message too long: %d bytes with its attributes, at most %d", size, MaxMessageBytes)
	}
	m.MessageID = newID()
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	return m, nil
}

func writeError(w http.ResponseWriter, e apiError) {
	type errBody struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type resp struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Error     errBody  `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.status)
	_ = xml.NewEncoder(w).Encode(resp{Error: errBody{Type: "Sender", Code: e.code, Message: e.msg}, RequestID: newID()})
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
