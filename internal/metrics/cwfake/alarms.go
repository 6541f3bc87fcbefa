package cwfake

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// AlarmsPath is where the SDK posts DescribeAlarms.
const AlarmsPath = "/service/GraniteServiceVersion20100801/operation/DescribeAlarms"

// DescribeAlarms limits the fake enforces, as the CloudWatch API reference
// documents them: at most 100 AlarmNames, never together with
// AlarmNamePrefix; names and prefixes of 1-255 characters; MaxRecords
// 1-100 (default 50).
const (
	MaxAlarmNames      = 100
	MaxAlarmNameLen    = 255
	MaxAlarmRecords    = 100
	defaultAlarmRecord = 50
)

// Alarm is one alarm the fake holds.
type Alarm struct {
	Name, State, Reason string
	// Updated is when the state last changed.
	Updated   time.Time
	Composite bool
}

// AlarmRequest is one decoded DescribeAlarms request.
type AlarmRequest struct {
	Names      []string
	Prefix     string
	StateValue string
	AlarmTypes []string
	MaxRecords int64
	NextToken  string
}

type alarmStore struct {
	mu       sync.Mutex
	alarms   map[string]Alarm
	requests []AlarmRequest
	// pageSize caps alarms per page below MaxRecords (0: no cap).
	pageSize int
	fail     func(n int) *Failure
}

// SetAlarm creates or updates an alarm: its state, reason and the time it
// went into that state. Safe to call while a client is polling (an alarm
// flipping mid-run).
func (s *Server) SetAlarm(a Alarm) {
	s.alarms.mu.Lock()
	defer s.alarms.mu.Unlock()
	if s.alarms.alarms == nil {
		s.alarms.alarms = map[string]Alarm{}
	}
	a.Updated = a.Updated.UTC()
	s.alarms.alarms[a.Name] = a
}

// SetAlarmPageSize caps the alarms of one DescribeAlarms page (below the
// request's MaxRecords), so tests exercise NextToken.
func (s *Server) SetAlarmPageSize(n int) {
	s.alarms.mu.Lock()
	s.alarms.pageSize = n
	s.alarms.mu.Unlock()
}

// FailAlarms, when set, is asked before each DescribeAlarms request (n
// counts from 1) and may return a failure to send instead.
func (s *Server) FailAlarms(f func(n int) *Failure) {
	s.alarms.mu.Lock()
	s.alarms.fail = f
	s.alarms.mu.Unlock()
}

// AlarmRequests returns the DescribeAlarms requests received so far.
func (s *Server) AlarmRequests() []AlarmRequest {
	s.alarms.mu.Lock()
	defer s.alarms.mu.Unlock()
	return append([]AlarmRequest(nil), s.alarms.requests...)
}

func (s *Server) serveAlarms(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" || r.Header.Get("Content-Type") != "application/cbor" {
		s.fail(w, &Failure{Status: 400, Type: "ValidationError", Message: "not an rpc-v2-cbor request"})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, &Failure{Status: 400, Type: "ValidationError", Message: err.Error()})
		return
	}
	req, err := decodeAlarmRequest(body)
	if err != nil {
		s.fail(w, &Failure{Status: 400, Type: "ValidationError", Message: err.Error()})
		return
	}
	st := &s.alarms
	st.mu.Lock()
	st.requests = append(st.requests, req)
	n, fail := len(st.requests), st.fail
	st.mu.Unlock()
	if fail != nil {
		if f := fail(n); f != nil {
			s.fail(w, f)
			return
		}
	}
	if s.Authorize != nil {
		if msg := s.authorizeAlarms(req); msg != "" {
			s.fail(w, accessDenied(msg))
			return
		}
	}
	if err := validateAlarmRequest(req); err != nil {
		s.fail(w, err)
		return
	}
	metric, composite, next := st.answer(req)
	out := cbor.Map{"MetricAlarms": metric, "CompositeAlarms": composite}
	if next != "" {
		out["NextToken"] = cbor.String(next)
	}
	payload := cbor.Encode(out)
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	_, _ = w.Write(payload)
}

// authorizeAlarms asks Authorize about a DescribeAlarms request: on "*"
// when it asks for composite alarms or names none, else on each named
// alarm's ARN.
func (s *Server) authorizeAlarms(req AlarmRequest) string {
	if len(req.Names) == 0 || slices.Contains(req.AlarmTypes, "CompositeAlarm") {
		return s.Authorize("cloudwatch:DescribeAlarms", "*", nil)
	}
	for _, n := range req.Names {
		if msg := s.Authorize("cloudwatch:DescribeAlarms", alarmARN(n), nil); msg != "" {
			return msg
		}
	}
	return ""
}

func alarmARN(name string) string { return "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:" + name }

func validateAlarmRequest(req AlarmRequest) *Failure {
	invalid := func(format string, args ...any) *Failure {
		return &Failure{Status: 400, Type: "com.amazonaws.cloudwatch#InvalidParameterValueException", Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(req.Names) > 0 && req.Prefix != "":
		return &Failure{Status: 400, Type: "com.amazonaws.cloudwatch#InvalidParameterCombinationException",
			Message: "AlarmNamePrefix and AlarmNames cannot be specified together"}
	case len(req.Names) > MaxAlarmNames:
		return invalid("AlarmNames: %d names, at most %d", len(req.Names), MaxAlarmNames)
	case req.MaxRecords != 0 && (req.MaxRecords < 1 || req.MaxRecords > MaxAlarmRecords):
		return invalid("MaxRecords %d: between 1 and %d", req.MaxRecords, MaxAlarmRecords)
	case len(req.Prefix) > MaxAlarmNameLen:
		return invalid("AlarmNamePrefix is longer than %d characters", MaxAlarmNameLen)
	}
	for _, n := range req.Names {
		if n == "" || len(n) > MaxAlarmNameLen {
			return invalid("alarm name %q: 1-%d characters", n, MaxAlarmNameLen)
		}
	}
	return nil
}

// answer lists the matching alarms in name order (metric alarms, then
// composite alarms when asked for), one page of them, and the next token.
func (st *alarmStore) answer(req AlarmRequest) (metric, composite cbor.List, next string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	wantMetric, wantComposite := len(req.AlarmTypes) == 0, false
	for _, t := range req.AlarmTypes {
		wantMetric = wantMetric || t == "MetricAlarm"
		wantComposite = wantComposite || t == "CompositeAlarm"
	}
	var all []Alarm
	for _, a := range st.alarms {
		switch {
		case a.Composite && !wantComposite, !a.Composite && !wantMetric:
		case len(req.Names) > 0 && !slices.Contains(req.Names, a.Name):
		case req.Prefix != "" && !strings.HasPrefix(a.Name, req.Prefix):
		case req.StateValue != "" && a.State != req.StateValue:
		default:
			all = append(all, a)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Composite != all[j].Composite {
			return !all[i].Composite
		}
		return all[i].Name < all[j].Name
	})
	offset := 0
	if req.NextToken != "" {
		offset, _ = strconv.Atoi(strings.TrimPrefix(req.NextToken, "alarms-"))
	}
	size := int(req.MaxRecords)
	if size == 0 {
		size = defaultAlarmRecord
	}
	if st.pageSize > 0 {
		size = min(size, st.pageSize)
	}
	end := min(len(all), offset+size)
	metric, composite = cbor.List{}, cbor.List{}
	for _, a := range all[min(offset, end):end] {
		ts := &cbor.Tag{ID: 1, Value: cbor.Float64(float64(a.Updated.UnixMilli()) / 1000)}
		m := cbor.Map{"AlarmName": cbor.String(a.Name), "AlarmArn": cbor.String(alarmARN(a.Name)),
			"StateValue": cbor.String(a.State), "StateReason": cbor.String(a.Reason), "StateUpdatedTimestamp": ts, "StateTransitionedTimestamp": ts}
		if a.Composite {
			composite = append(composite, m)
		} else {
			metric = append(metric, m)
		}
	}
	if end < len(all) {
		next = fmt.Sprintf("alarms-%d", end)
	}
	return metric, composite, next
}

func decodeAlarmRequest(body []byte) (AlarmRequest, error) {
	var req AlarmRequest
	if len(body) == 0 {
		return req, nil
	}
	v, err := cbor.Decode(body)
	if err != nil {
		return req, fmt.Errorf("decode cbor: %w", err)
	}
	m, ok := v.(cbor.Map)
	if !ok {
		return req, fmt.Errorf("request is %T, not a map", v)
	}
	for _, n := range list(m["AlarmNames"]) {
		req.Names = append(req.Names, str(n))
	}
	for _, t := range list(m["AlarmTypes"]) {
		req.AlarmTypes = append(req.AlarmTypes, str(t))
	}
	req.Prefix, req.StateValue, req.NextToken = str(m["AlarmNamePrefix"]), str(m["StateValue"]), str(m["NextToken"])
	if mr, ok := m["MaxRecords"]; ok {
		if req.MaxRecords, err = cbor.AsInt64(mr); err != nil {
			return req, fmt.Errorf("MaxRecords: %w", err)
		}
	}
	return req, nil
}

func list(v cbor.Value) cbor.List {
	l, _ := v.(cbor.List)
	return l
}
