package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

var alarmSince = time.Date(2026, 11, 29, 19, 0, 3, 0, time.UTC)

// withAlarms points e's alarm source at a CloudWatch fake: the real SDK
// client, over Smithy RPCv2 CBOR.
func (e *env) withAlarms(t *testing.T) *cwfake.Server {
	t.Helper()
	cw := cwfake.New(t)
	e.Deps.Alarms = metrics.NewAlarmSource(metrics.SourceConfig{
		Context: &config.Context{Metrics: config.MetricsConfig{CloudWatch: &config.CloudWatchMetrics{EndpointURL: cw.URL}}},
		AWSConfig: func(context.Context) (aws.Config, error) {
			return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1, HTTPClient: cw.HTTPClient(),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake", "")}, nil
		}})
	return cw
}

// An alarm flipping to ALARM mid-run stops the drill and rolls it back; the
// journal and JUnit say which alarm, since when and why.
func TestAlarmStopConditionFlipsMidRun(t *testing.T) {
	e := newEnv(t)
	cw := e.withAlarms(t)
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "OK", Reason: "ok", Updated: alarmSince})
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-db-cpu", State: "OK", Updated: alarmSince})
	d := parse(t, `
name: alarm-stop
timeout: 5m
poll_interval: 20ms
hypothesis:
  - name: no kosha alarm fires
    alarm: {prefix: kosha-, state: OK}
stop_conditions:
  - name: api errors
    alarm: {name: kosha-api-5xx}
  - name: db
    alarm: {name: [kosha-db-cpu]}
steps:
  - breaker.force-open: {dependency: openai}
  - id: hold
    sleep: 4m
  - id: never
    shell: "true"
`)
	rec := &recorder{on: func(ev Event) {
		if ev.Kind == EventStepStarted && ev.Step.ID == "hold" {
			cw.SetAlarm(cwfake.Alarm{Name: "kosha-api-5xx", State: "ALARM", Reason: "Threshold Crossed: 5xx > 1", Updated: alarmSince.Add(time.Minute)})
		}
	}}
	start := time.Now()
	j, log := e.run(context.Background(), d, rec)
	if j.Outcome != drill.OutcomeStopped || j.ExitCode != exitcode.Error || j.Stop == nil || j.Stop.Condition != "api errors" {
		t.Fatalf("outcome %s exit %d stop %+v\n%s", j.Outcome, j.ExitCode, j.Stop, log)
	}
	if time.Since(start) > time.Minute {
		t.Errorf("the stop took %s", time.Since(start))
	}
	if a := j.Stop.Alarms; len(a) != 1 || a[0].Name != "kosha-api-5xx" || a[0].State != "ALARM" ||
		a[0].Reason != "Threshold Crossed: 5xx > 1" || !a[0].Since.Equal(alarmSince.Add(time.Minute)) {
		t.Errorf("stop alarms = %+v", a)
	}
	if !strings.Contains(j.Stop.Detail, "kosha-api-5xx ALARM since 2026-11-29T19:01:03Z: Threshold Crossed") {
		t.Errorf("stop detail = %q", j.Stop.Detail)
	}
	if s := stepByID(t, j, "hold"); s.Status != drill.StatusStopped {
		t.Errorf("hold = %+v", s)
	}
	if !j.RollbacksOK || e.Store.Has(breaker.OverrideKey("openai")) {
		t.Errorf("rollback after the alarm: %+v", j.Rollbacks)
	}
	// The hypothesis after the rollback sees the alarm still firing.
	if len(j.Hypothesis.After) != 1 || j.Hypothesis.After[0].OK {
		t.Errorf("hypothesis after = %+v", j.Hypothesis.After)
	}
	x, err := JUnit(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name="stop_alarm" value="kosha-api-5xx"`, `name="stop_alarm_since" value="2026-11-29T19:01:03Z"`,
		`name="stop_alarm_reason" value="Threshold Crossed: 5xx &gt; 1"`, `name="stop_condition" value="api errors"`} {
		if !strings.Contains(string(x), want) {
			t.Errorf("JUnit lacks %s:\n%s", want, x)
		}
	}
	// Every request covered all the drill's alarms at once: the common
	// prefix of kosha-api-5xx, kosha-db-cpu and kosha-*.
	for _, r := range cw.AlarmRequests() {
		if r.Prefix != "kosha-" || len(r.Names) != 0 {
			t.Fatalf("request %+v is not the drill's one batched request", r)
		}
	}
}

// One poll round, one request: four alarm conditions (three stop
// conditions and an assert) cost one DescribeAlarms request per round.
func TestAlarmConditionsShareOneRequestPerPoll(t *testing.T) {
	e := newEnv(t)
	cw := e.withAlarms(t)
	for _, n := range []string{"a-1", "a-2", "a-3"} {
		cw.SetAlarm(cwfake.Alarm{Name: n, State: "OK", Updated: alarmSince})
	}
	d := parse(t, `
name: batch
timeout: 2h
poll_interval: 1h
stop_conditions:
  - alarm: {name: a-1}
  - alarm: {name: [a-2, a-3]}
  - alarm: {prefix: a-, insufficient_data: true}
steps:
  - assert:
      alarm: {name: a-1, state: OK}
`)
	j, log := e.run(context.Background(), d)
	if j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", j.ExitCode, j.Reason, log)
	}
	reqs := cw.AlarmRequests()
	// One round at preflight, one before the step (the stop conditions),
	// one for the assert.
	if len(reqs) != 3 {
		t.Fatalf("%d DescribeAlarms requests, want 3 (one per poll round): %+v", len(reqs), reqs)
	}
	for _, r := range reqs {
		if r.Prefix != "a-" {
			t.Errorf("request %+v, want the common prefix a-", r)
		}
	}
}

// A name that matches no alarm never counts as "not firing": the check
// cannot be evaluated, and the preflight refuses the run (exit 3, the
// alarm does not exist) before anything is done.
func TestAlarmThatDoesNotExistIsNotQuiet(t *testing.T) {
	e := newEnv(t)
	cw := e.withAlarms(t)
	cw.SetAlarm(cwfake.Alarm{Name: "api-5xx", State: "OK", Updated: alarmSince})
	d := parse(t, `
name: typo
timeout: 1m
hypothesis:
  - alarm: {name: [api-5xx, api-5xxx], state: OK}
steps:
  - breaker.force-open: {dependency: openai}
`)
	j, _ := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomeRefused || j.ExitCode != 3 || len(j.Hypothesis.Before) != 0 || len(j.Preflight) != 1 ||
		!strings.Contains(j.Preflight[0].Error, "no CloudWatch alarm matches api-5xxx in eu-west-1") || !strings.Contains(j.Reason, "describe-alarms --region eu-west-1") {
		t.Errorf("outcome %s exit %d: %s; preflight %+v", j.Outcome, j.ExitCode, j.Reason, j.Preflight)
	}
	if e.Store.Has(breaker.OverrideKey("openai")) || len(j.Rollbacks) != 0 {
		t.Error("a refused drill pulled a lever")
	}
}

// Names and prefixes one request cannot cover make the run invalid before
// anything is done.
func TestAlarmsWithoutCommonPrefixAreInvalid(t *testing.T) {
	e := newEnv(t)
	cw := e.withAlarms(t)
	d := parse(t, `
name: spread
timeout: 1m
stop_conditions:
  - alarm: {name: api-5xx}
  - alarm: {prefix: db-}
steps:
  - breaker.force-open: {dependency: openai}
`)
	j, _ := e.run(context.Background(), d)
	if j.Outcome != drill.OutcomeInvalid || j.ExitCode != exitcode.Usage || !strings.Contains(j.Reason, "share no common name prefix") {
		t.Errorf("outcome %s exit %d: %s", j.Outcome, j.ExitCode, j.Reason)
	}
	if len(cw.AlarmRequests()) != 0 || e.Store.Has(breaker.OverrideKey("openai")) {
		t.Error("an invalid drill acted")
	}
}
