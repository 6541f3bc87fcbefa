package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

var alarmAt = time.Date(2026, 11, 29, 19, 0, 3, 0, time.UTC)

func TestDescribeAlarmsByNamesIsOneRequest(t *testing.T) {
	cw := cwfake.New(t)
	cw.SetAlarm(cwfake.Alarm{Name: "api-5xx", State: "OK", Reason: "fine", Updated: alarmAt})
	cw.SetAlarm(cwfake.Alarm{Name: "api-latency", State: "ALARM", Reason: "Threshold Crossed", Updated: alarmAt})
	cw.SetAlarm(cwfake.Alarm{Name: "other", State: "ALARM", Updated: alarmAt})
	cw.SetAlarm(cwfake.Alarm{Name: "api-composite", State: "INSUFFICIENT_DATA", Updated: alarmAt, Composite: true})
	res, err := metrics.DescribeAlarms(context.Background(), cw.Client(1), metrics.AlarmQuery{Names: []string{"api-5xx", "api-latency", "api-composite", "api-5xx"}})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(res.Alarms)
	want := fmt.Sprint([]metrics.Alarm{{Name: "api-5xx", State: "OK", Reason: "fine", Since: alarmAt},
		{Name: "api-composite", State: "INSUFFICIENT_DATA", Since: alarmAt, Composite: true},
		{Name: "api-latency", State: "ALARM", Reason: "Threshold Crossed", Since: alarmAt}})
	if got != want {
		t.Errorf("alarms\n got %s\nwant %s", got, want)
	}
	reqs := cw.AlarmRequests()
	if len(reqs) != 1 || res.Pages != 1 || len(reqs[0].Names) != 3 || reqs[0].Prefix != "" || len(reqs[0].AlarmTypes) != 2 {
		t.Errorf("requests %+v, pages %d", reqs, res.Pages)
	}
}

// Names and prefixes together, or more than 100 names, cannot go in one
// AlarmNames request: one request asks for their common prefix and the
// answer is filtered; its pages follow NextToken.
func TestDescribeAlarmsByCommonPrefixPages(t *testing.T) {
	cw := cwfake.New(t)
	cw.SetAlarmPageSize(2)
	var names []string
	for i := range 120 {
		name := fmt.Sprintf("kosha-prod-%03d", i)
		names = append(names, name)
		state := "OK"
		if i == 117 {
			state = "ALARM"
		}
		cw.SetAlarm(cwfake.Alarm{Name: name, State: state, Updated: alarmAt})
	}
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-staging-1", State: "ALARM", Updated: alarmAt})
	res, err := metrics.DescribeAlarms(context.Background(), cw.Client(1), metrics.AlarmQuery{Names: names})
	if err != nil {
		t.Fatal(err)
	}
	reqs := cw.AlarmRequests()
	if reqs[0].Prefix != "kosha-prod-" || len(reqs[0].Names) != 0 {
		t.Errorf("first request %+v, want the common prefix kosha-prod-", reqs[0])
	}
	if len(res.Alarms) != 120 || res.Pages != 60 || len(reqs) != 60 {
		t.Errorf("%d alarms in %d pages (%d requests), want 120 in 60", len(res.Alarms), res.Pages, len(reqs))
	}
	if res.Alarms[117].State != "ALARM" {
		t.Errorf("alarm 117: %+v", res.Alarms[117])
	}

	cw2 := cwfake.New(t)
	cw2.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Updated: alarmAt})
	cw2.SetAlarm(cwfake.Alarm{Name: "kosha-db-cpu", State: "ALARM", Updated: alarmAt})
	cw2.SetAlarm(cwfake.Alarm{Name: "kosha-dbx", State: "ALARM", Updated: alarmAt})
	res, err = metrics.DescribeAlarms(context.Background(), cw2.Client(1), metrics.AlarmQuery{Names: []string{"kosha-api-5xx"}, Prefixes: []string{"kosha-db-"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := cw2.AlarmRequests(); len(r) != 1 || r[0].Prefix != "kosha-" {
		t.Errorf("requests %+v", r)
	}
	if len(res.Alarms) != 2 || res.Alarms[0].Name != "kosha-api-5xx" || res.Alarms[1].Name != "kosha-db-cpu" {
		t.Errorf("alarms %+v: want kosha-api-5xx and kosha-db-cpu (kosha-dbx is not under kosha-db-)", res.Alarms)
	}
}

func TestAlarmRequestRefusesWhatOneRequestCannotCover(t *testing.T) {
	for name, q := range map[string]metrics.AlarmQuery{
		"no common prefix": {Names: []string{"api-5xx"}, Prefixes: []string{"db-"}},
		"empty":            {},
		"too long":         {Names: []string{strings.Repeat("a", 256)}},
	} {
		if _, err := metrics.AlarmRequest(q); !errors.Is(err, metrics.ErrAlarmQuery) {
			t.Errorf("%s: %v, want ErrAlarmQuery", name, err)
		}
	}
	in, err := metrics.AlarmRequest(metrics.AlarmQuery{Prefixes: []string{"kosha-prod-"}})
	if err != nil || *in.AlarmNamePrefix != "kosha-prod-" || *in.MaxRecords != metrics.MaxAlarmRecords {
		t.Errorf("one prefix: %+v %v", in, err)
	}
}

// The fake enforces the documented limits, so a request the real service
// refuses fails here too.
func TestFakeRefusesNamesWithPrefix(t *testing.T) {
	cw := cwfake.New(t)
	_, err := cw.Client(1).DescribeAlarms(context.Background(), mustInput(t))
	if err == nil || !strings.Contains(err.Error(), "InvalidParameterCombination") {
		t.Errorf("names with a prefix: %v", err)
	}
}

func mustInput(t *testing.T) *cloudwatch.DescribeAlarmsInput {
	t.Helper()
	return &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"a"}, AlarmNamePrefix: aws.String("a")}
}
