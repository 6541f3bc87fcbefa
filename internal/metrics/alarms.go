package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/kosha-platform/koshactl/internal/config"
)

// DescribeAlarms limits (CloudWatch API reference, DescribeAlarms): a
// request names at most 100 alarms in AlarmNames, or gives one
// AlarmNamePrefix, never both; a name or prefix is 1-255 characters; a
// page holds at most 100 alarms (MaxRecords), the rest follows through
// NextToken.
const (
	MaxAlarmNamesPerRequest = 100
	MaxAlarmNameLen         = 255
	MaxAlarmRecords         = 100
)

// Alarm states, as CloudWatch names them.
const (
	AlarmStateOK               = string(types.StateValueOk)
	AlarmStateAlarm            = string(types.StateValueAlarm)
	AlarmStateInsufficientData = string(types.StateValueInsufficientData)
)

// AlarmQuery names the alarms of one region to read in one DescribeAlarms
// call: exact names and name prefixes.
type AlarmQuery struct {
	Names    []string
	Prefixes []string
}

// Alarm is one alarm's current state.
type Alarm struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Reason is CloudWatch's state reason (text the alarm's evaluation
	// wrote).
	Reason string `json:"reason,omitempty"`
	// Since is when the alarm went into State (its state transition time,
	// or its state update time when CloudWatch gives no transition time).
	Since     time.Time `json:"since"`
	Composite bool      `json:"composite,omitempty"`
}

// ErrAlarmQuery reports a set of alarm names and prefixes that one
// DescribeAlarms request cannot cover.
var ErrAlarmQuery = errors.New("invalid alarm query")

// AlarmRequest returns the one DescribeAlarms request that covers q:
//
//   - names only, at most [MaxAlarmNamesPerRequest]: AlarmNames;
//   - otherwise (a prefix, or more names): AlarmNamePrefix set to the
//     longest prefix every name and prefix shares, the answer filtered
//     here. No common prefix is an error: the request would list every
//     alarm of the region.
//
// Both ask for metric and composite alarms, 100 a page.
func AlarmRequest(q AlarmQuery) (*cloudwatch.DescribeAlarmsInput, error) {
	names, prefixes := unique(q.Names, nil), unique(q.Prefixes, nil)
	for _, s := range append(slices.Clone(names), prefixes...) {
		if s == "" || len(s) > MaxAlarmNameLen {
			return nil, fmt.Errorf("%w: alarm name or prefix %q: use 1-%d characters", ErrAlarmQuery, s, MaxAlarmNameLen)
		}
	}
	in := &cloudwatch.DescribeAlarmsInput{AlarmTypes: []types.AlarmType{types.AlarmTypeMetricAlarm, types.AlarmTypeCompositeAlarm},
		MaxRecords: aws.Int32(MaxAlarmRecords)}
	switch {
	case len(names) == 0 && len(prefixes) == 0:
		return nil, fmt.Errorf("%w: no alarm named", ErrAlarmQuery)
	case len(prefixes) == 0 && len(names) <= MaxAlarmNamesPerRequest:
		in.AlarmNames = names
		return in, nil
	}
	common := commonPrefix(append(names, prefixes...))
	if common == "" {
		return nil, fmt.Errorf("%w: alarms %s share no common name prefix: one DescribeAlarms request takes either at most %d names or one name prefix; name the alarms so they share a prefix, or use at most %d names and no prefix",
			ErrAlarmQuery, strings.Join(append(names, quoteAll(prefixes, "*")...), ", "), MaxAlarmNamesPerRequest, MaxAlarmNamesPerRequest)
	}
	in.AlarmNamePrefix = aws.String(common)
	return in, nil
}

// Matches reports whether an alarm called name is one q asks for.
func (q AlarmQuery) Matches(name string) bool {
	return slices.Contains(q.Names, name) || slices.ContainsFunc(q.Prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// describeAlarmsAPI is the one call alarm reads make; the SDK's paginator
// client interface.
type describeAlarmsAPI interface {
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

var _ cloudwatch.DescribeAlarmsAPIClient = describeAlarmsAPI((*cloudwatch.Client)(nil))

// AlarmRead is the answer of one DescribeAlarms call.
type AlarmRead struct {
	// Alarms are the alarms q matched, sorted by name.
	Alarms []Alarm
	// Pages counts the HTTP requests the call took (one per NextToken page).
	Pages int
}

// DescribeAlarms reads the alarms q names with one DescribeAlarms call
// (see [AlarmRequest]), following NextToken pages.
func DescribeAlarms(ctx context.Context, api describeAlarmsAPI, q AlarmQuery) (AlarmRead, error) {
	in, err := AlarmRequest(q)
	if err != nil {
		return AlarmRead{}, err
	}
	var out AlarmRead
	p := cloudwatch.NewDescribeAlarmsPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if nc := notCloudWatch(err); nc != nil {
				nc.Alarms = true
				err = nc
			} else {
				err = classifyAWS(err)
			}
			return AlarmRead{}, fmt.Errorf("cloudwatch DescribeAlarms: %w", err)
		}
		out.Pages++
		for _, a := range page.MetricAlarms {
			out.add(q, aws.ToString(a.AlarmName), string(a.StateValue), aws.ToString(a.StateReason), a.StateTransitionedTimestamp, a.StateUpdatedTimestamp, false)
		}
		for _, a := range page.CompositeAlarms {
			out.add(q, aws.ToString(a.AlarmName), string(a.StateValue), aws.ToString(a.StateReason), a.StateTransitionedTimestamp, a.StateUpdatedTimestamp, true)
		}
	}
	slices.SortFunc(out.Alarms, func(a, b Alarm) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (r *AlarmRead) add(q AlarmQuery, name, state, reason string, transitioned, updated *time.Time, composite bool) {
	if !q.Matches(name) {
		return
	}
	a := Alarm{Name: name, State: state, Reason: reason, Composite: composite}
	switch {
	case transitioned != nil && !transitioned.IsZero():
		a.Since = transitioned.UTC()
	case updated != nil:
		a.Since = updated.UTC()
	}
	r.Alarms = append(r.Alarms, a)
}

// AlarmSource reads CloudWatch alarms of a context: in the region its
// metrics.cloudwatch names, else its AWS configuration's, or in a region
// asked for, through the context's CloudWatch endpoint when it names one.
type AlarmSource struct {
	sc SourceConfig

	mu      sync.Mutex
	cfg     *aws.Config
	clients map[string]describeAlarmsAPI
}

// NewAlarmSource returns a source for sc's context. Nothing is loaded
// until the first read.
func NewAlarmSource(sc SourceConfig) *AlarmSource {
	return &AlarmSource{sc: sc, clients: map[string]describeAlarmsAPI{}}
}

func (s *AlarmSource) cloudWatch() *config.CloudWatchMetrics {
	if s.sc.Context != nil && s.sc.Context.Metrics.CloudWatch != nil {
		return s.sc.Context.Metrics.CloudWatch
	}
	return &config.CloudWatchMetrics{}
}

func (s *AlarmSource) config(ctx context.Context) (aws.Config, error) {
	if s.cfg != nil {
		return *s.cfg, nil
	}
	if s.sc.AWSConfig == nil {
		return aws.Config{}, fmt.Errorf("%w: cloudwatch alarms need an AWS configuration", ErrInvalidSource)
	}
	cfg, err := s.sc.AWSConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration for cloudwatch alarms: %w", err)
	}
	s.cfg = &cfg
	return cfg, nil
}

// DefaultRegion returns the region alarms are read in unless one is named.
func (s *AlarmSource) DefaultRegion(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.cloudWatch().Region; r != "" {
		return r, nil
	}
	cfg, err := s.config(ctx)
	if err != nil {
		return "", err
	}
	return cfg.Region, nil
}

// Describe reads q's alarms in region ("" for the default) with one
// DescribeAlarms call.
func (s *AlarmSource) Describe(ctx context.Context, region string, q AlarmQuery) (AlarmRead, error) {
	api, err := s.client(ctx, region)
	if err != nil {
		return AlarmRead{}, err
	}
	return DescribeAlarms(ctx, api, q)
}

func (s *AlarmSource) client(ctx context.Context, region string) (describeAlarmsAPI, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[region]; ok {
		return c, nil
	}
	cfg, err := s.config(ctx)
	if err != nil {
		return nil, err
	}
	cw := s.cloudWatch()
	if region == "" {
		region = cw.Region
	}
	c := newCloudWatchClient(cfg, cw, region)
	s.clients[region] = c
	return c, nil
}

func commonPrefix(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	p := ss[0]
	for _, s := range ss[1:] {
		n := 0
		for n < len(p) && n < len(s) && p[n] == s[n] {
			n++
		}
		p = p[:n]
	}
	for !utf8.ValidString(p) {
		p = p[:len(p)-1] // never cut a character in two
	}
	return p
}

func quoteAll(ss []string, suffix string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s + suffix
	}
	return out
}
