package gameday

import (
	"math"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
)

var t0 = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(math.Round(s*1000)) * time.Millisecond) }

func atp(s float64) *time.Time { t := at(s); return &t }

func check(phase, name string, start, end float64, ok bool, detail string) drill.CheckRecord {
	return drill.CheckRecord{Phase: phase, Name: name, Kind: "breaker", Description: "every reporting instance of openai is closed (gauges)",
		OK: ok, Detail: detail, Checks: 1, StartedAt: at(start), EndedAt: atp(end), DurationSeconds: end - start}
}

func step(id, kind, status string, start, end float64, detail string, rbs ...string) drill.StepRecord {
	s := drill.StepRecord{ID: id, Name: id, Kind: kind, Status: status, Description: kind + " " + id, Detail: detail, Rollbacks: rbs, TimeoutSeconds: 30}
	if start >= 0 {
		s.StartedAt = atp(start)
	}
	if end >= 0 {
		s.EndedAt, s.DurationSeconds = atp(end), end-start
	}
	return s
}

func withReason(s drill.StepRecord, why string) drill.StepRecord { s.Reason = why; return s }

func rollback(id, stepID, subject string, reg, start, end float64, expires float64) drill.RollbackRecord {
	return drill.RollbackRecord{ID: id, Step: stepID, Subject: subject, Description: "clear the drill's override of " + subject,
		RegisteredAt: at(reg), Status: drill.StatusOK, Attempts: 1, StartedAt: atp(start), EndedAt: atp(end), DurationSeconds: end - start,
		Detail: "cleared", ExpiresAt: atp(expires), Lever: &drill.LeverRecord{Kind: drill.LeverOverride, Dependency: "openai", Inverse: "clear"}}
}

func gauges(dep string, from, to, every float64, state func(s float64) string) []drill.GaugeSample {
	var out []drill.GaugeSample
	for s := from; s <= to; s += every {
		st := state(s)
		out = append(out, drill.GaugeSample{At: at(s), Dependency: dep, Instances: []drill.InstanceSample{{Instance: "gw-1", State: st}, {Instance: "gw-2", State: st}}})
	}
	return out
}

// stoppedJournal is a drill an alarm stopped: two levers pulled, the soak
// cut short, both put back by the run's rollback.
func stoppedJournal() *drill.Journal {
	j := &drill.Journal{Kind: "DrillRun", Version: drill.JournalVersion, RunID: "a1b2c3d4e5f6", Context: "local", Store: "sqlite state/local.db",
		Gauges: "prometheus http://127.0.0.1:9000/metrics", Actor: "ci@example.com",
		Drill:     drill.DrillInfo{Name: "alarm-stop", File: "docs/drills/alarm-stop.yaml", Description: "openai forced open; stop when the API's 5xx alarm fires"},
		StartedAt: t0, Deadline: at(300), EndedAt: atp(21.4), DurationSeconds: 21.4, TimeoutSeconds: 300,
		Outcome: drill.OutcomeStopped, Reason: `stop condition "api-5xx" held: alarm kosha-api-5xx is ALARM`, RollbacksOK: true, ExitCode: 1,
		Hypothesis: drill.Hypothesis{
			Before: []drill.CheckRecord{check(drill.PhaseBefore, "openai-closed", 0.1, 0.4, true, "openai: 2 instance(s): 2 closed")},
			After:  []drill.CheckRecord{check(drill.PhaseAfter, "openai-closed", 19.2, 21.3, true, "openai: 2 instance(s): 2 closed")},
		},
		Steps: []drill.StepRecord{
			withReason(step("force-openai", "breaker.force_open", drill.StatusPassed, 0.5, 0.9, "forced open until 2026-03-14T09:35:00Z", "rb-1"),
				"alarm-guarded game day (CHG-1042)"),
			withReason(step("drain-agent", "ratelimit.drain", drill.StatusPassed, 0.9, 1.2, "drained", "rb-2"), "step drain-agent"),
			step("soak", "sleep", drill.StatusStopped, 1.2, 17.6, ""),
			step("verify", "assert", drill.StatusSkipped, -1, -1, ""),
		},
		Stop: &drill.StopRecord{Condition: "api-5xx", Detail: "alarm kosha-api-5xx is ALARM", At: at(17.5),
			Alarms: []drill.Alarm{{Name: "kosha-api-5xx", State: "ALARM", Reason: "Threshold Crossed: 3 datapoints > 1", Since: at(17.1)}}},
		Rollbacks: []drill.RollbackRecord{
			rollback("rb-1", "force-openai", "breaker#openai", 0.5, 18.4, 18.6, 300),
			{ID: "rb-2", Step: "drain-agent", Subject: "rl#agent-1", Description: "restore agent-1's tokens", RegisteredAt: at(0.9),
				Status: drill.StatusOK, Attempts: 1, StartedAt: atp(17.7), EndedAt: atp(18.3), DurationSeconds: 0.6, Detail: "restored 100 tokens"},
		},
		Audit: []drill.AuditRef{
			{ID: "01JQ0000000000000000000001", At: at(0.8), Action: "breaker.force_open", Subject: "breaker#openai"},
			{ID: "01JQ0000000000000000000002", At: at(1.1), Action: "ratelimit.drain", Subject: "rl#agent-1"},
			{ID: "01JQ0000000000000000000003", At: at(18.2), Action: "ratelimit.set", Subject: "rl#agent-1"},
			{ID: "01JQ0000000000000000000004", At: at(18.5), Action: "breaker.clear", Subject: "breaker#openai"},
		},
	}
	for s := 1.5; s < 17.5; s += 2 {
		j.StopEvaluations = append(j.StopEvaluations, drill.StopEvaluation{At: at(s), Condition: "api-5xx", Detail: "no alarm in ALARM"})
	}
	j.StopEvaluations = append(j.StopEvaluations, drill.StopEvaluation{At: at(17.5), Condition: "api-5xx", Holds: true, Detail: "alarm kosha-api-5xx is ALARM"})
	j.GaugeSamples = gauges("openai", 0.1, 21, 1, func(s float64) string {
		switch {
		case s < 1:
			return "closed"
		case s < 18.6:
			return "forced_open"
		case s < 19.6:
			return "half_open"
		}
		return "closed"
	})
	return j
}

// killedJournal is a run SIGKILLed in its half-way sleep and finished by
// drill recover two minutes later.
func killedJournal() *drill.Journal {
	j := &drill.Journal{Kind: "DrillRun", Version: drill.JournalVersion, RunID: "0f0e0d0c0b0a", Context: "local", Store: "sqlite state/local.db",
		Actor: "ci@example.com", Drill: drill.DrillInfo{Name: "interrupted", File: "docs/drills/interrupted.yaml"},
		StartedAt: t0, Deadline: at(600), TimeoutSeconds: 600, Outcome: drill.OutcomeKilled,
		Reason: "the run's process died before it finished; drill recover ran its rollbacks", RollbacksOK: true, ExitCode: 1,
		Runner:     &drill.RunnerRecord{PID: 4242, Host: "ci-runner"},
		Hypothesis: drill.Hypothesis{Before: []drill.CheckRecord{}, After: []drill.CheckRecord{}},
		Steps: []drill.StepRecord{
			step("force-openai", "breaker.force_open", drill.StatusPassed, 0.2, 0.5, "forced open until 2026-03-14T09:40:00Z", "rb-1"),
			step("drain", "ratelimit.drain", drill.StatusPassed, 0.5, 0.8, "drained", "rb-2"),
			step("header", "chaos.sign", drill.StatusPassed, 0.8, 0.9, "minted", "rb-3"),
			step("halfway", "sleep", drill.StatusRunning, 0.9, -1, ""),
			step("after", "assert", drill.StatusPending, -1, -1, ""),
		},
		Rollbacks: []drill.RollbackRecord{
			rollback("rb-1", "force-openai", "breaker#openai", 0.2, 130.5, 130.7, 600),
			{ID: "rb-2", Step: "drain", Subject: "rl#agent-1", Description: "restore agent-1's tokens", RegisteredAt: at(0.5),
				Status: drill.StatusOK, Attempts: 1, StartedAt: atp(130.2), EndedAt: atp(130.4), RecoveredAt: atp(130.2), Detail: "restored"},
			{ID: "rb-3", Step: "header", Subject: "chaos header 7f3a", Description: "withdraw the chaos header", RegisteredAt: at(0.8),
				Status: drill.StatusOK, Attempts: 1, StartedAt: atp(130.1), EndedAt: atp(130.1), RecoveredAt: atp(130.1),
				Detail: "withdrawn: it lived only in the run's process", ExpiresAt: atp(600)},
		},
		Recoveries: []drill.RecoveryRecord{{At: at(130), Actor: "oncall@example.com", Rollbacks: []string{"rb-3", "rb-2", "rb-1"}, OK: true,
			Detail: "3 rollback(s) run, 3 ok"}},
	}
	j.Rollbacks[0].RecoveredAt = atp(130.5)
	return j
}

func fleetStep(s drill.StepRecord, f *drill.FleetRecord) drill.StepRecord { s.Fleet = f; return s }

// refusedJournal is a run the preflight refused: its stop condition's
// alarm source answered AccessDenied, so nothing was done.
func refusedJournal() *drill.Journal {
	pre := func(role, name, kind string, start, end float64, ok bool, detail, errText string) drill.CheckRecord {
		return drill.CheckRecord{Phase: drill.PhasePreflight, Role: role, Name: name, Kind: kind, Description: kind + " " + name, OK: ok, Detail: detail,
			Error: errText, Checks: 1, StartedAt: at(start), EndedAt: atp(end), DurationSeconds: end - start}
	}
	cause := "describe alarms: AccessDeniedException: not authorized to perform cloudwatch:DescribeAlarms"
	fix := "grant the caller read access (koshactl iam policy --role drill-runner shows what a drill needs), or refresh the credentials"
	j := &drill.Journal{Kind: "DrillRun", Version: drill.JournalVersion, RunID: "5e5e5e5e5e5e", Context: "staging", Store: "dynamodb kosha-control",
		Gauges: "cloudwatch Kosha/Gateway", Actor: "arn:aws:sts::123456789012:assumed-role/drill-runner/ci",
		Drill:     drill.DrillInfo{Name: "alarm-stop", File: "docs/drills/alarm-stop.yaml", Description: "openai forced open; stop when the API's 5xx alarm fires"},
		StartedAt: t0, Deadline: at(300), EndedAt: atp(0.6), DurationSeconds: 0.6, TimeoutSeconds: 300, Outcome: drill.OutcomeRefused,
		Reason:      `refused before any lever was pulled: stop condition "api-5xx" could not be evaluated: ` + cause + ": " + fix + "; nothing was done",
		RollbacksOK: true, ExitCode: 6,
		Preflight: []drill.CheckRecord{
			pre(drill.RoleStopCondition, "api-5xx", "alarm", 0.1, 0.3, false, "", `stop condition could not be evaluated: `+cause+` (fix: `+fix+`)`),
			pre(drill.RoleHypothesis, "openai-closed", "breaker", 0.3, 0.5, true, "can be evaluated (it holds now): openai: 2 instance(s): 2 closed", ""),
		},
		Guard:      &drill.GuardRecord{Phase: drill.GuardPreflight, Role: drill.RoleStopCondition, Condition: "api-5xx", Cause: cause, Fix: fix, At: at(0.3)},
		Hypothesis: drill.Hypothesis{Before: []drill.CheckRecord{}, After: []drill.CheckRecord{}, AfterSkipped: "refused at preflight: nothing was done"},
		Steps: []drill.StepRecord{
			step("force-openai", "breaker.force_open", drill.StatusSkipped, -1, -1, ""),
			step("soak", "sleep", drill.StatusSkipped, -1, -1, ""),
		},
		Rollbacks: []drill.RollbackRecord{},
	}
	return j
}

// guardLostJournal is a run whose stop condition's metrics source went
// away mid-soak: after its grace the guard was lost, the steps stopped and
// both levers were put back. Its force-open waited for the fleet.
func guardLostJournal() *drill.Journal {
	cause := "read breaker_state: dial tcp 127.0.0.1:9000: connect: connection refused"
	fix := "check that the metrics source is reachable from here (metrics_url, the network), then run the drill again"
	j := &drill.Journal{Kind: "DrillRun", Version: drill.JournalVersion, RunID: "6f6f6f6f6f6f", Context: "local", Store: "sqlite state/local.db",
		Gauges: "prometheus http://127.0.0.1:9000/metrics", Actor: "ci@example.com",
		Drill:     drill.DrillInfo{Name: "openai-outage", File: "docs/drills/openai-outage.yaml", Description: "openai forced open fleet-wide"},
		StartedAt: t0, Deadline: at(300), EndedAt: atp(24.2), DurationSeconds: 24.2, TimeoutSeconds: 300, Outcome: drill.OutcomeGuardLost,
		Reason:      `stop condition "core-api-closed" could not be evaluated for 4 polls since 09:30:10Z: ` + cause + ": " + fix,
		RollbacksOK: true, ExitCode: 5,
		Preflight: []drill.CheckRecord{{Phase: drill.PhasePreflight, Role: drill.RoleStopCondition, Name: "core-api-closed", Kind: "breaker",
			Description: "core-api closed", OK: true, Detail: "can be evaluated (it does not hold now): core-api: 2 instance(s): 2 closed", Checks: 1, StartedAt: at(0.05), EndedAt: atp(0.08), DurationSeconds: 0.03}},
		Hypothesis: drill.Hypothesis{
			Before: []drill.CheckRecord{check(drill.PhaseBefore, "openai-closed", 0.1, 0.4, true, "openai: 2 instance(s): 2 closed")},
			After:  []drill.CheckRecord{},
		},
		Steps: []drill.StepRecord{
			fleetStep(step("force-openai", "breaker.force_open", drill.StatusPassed, 0.5, 3.9,
				"forced open until 2026-03-14T09:35:00Z; fleet confirmed: forced on 2 of 2 instances after 3.2s", "rb-1"),
				&drill.FleetRecord{Dependency: "openai", Goal: "forced", Confirmed: true, Summary: "forced on 2 of 2 instances", ElapsedSeconds: 3.2, TimeoutSeconds: 45}),
			step("soak", "sleep", drill.StatusGuardLost, 3.9, 18.1, ""),
			step("verify", "assert", drill.StatusSkipped, -1, -1, ""),
		},
		Guard: &drill.GuardRecord{Phase: drill.GuardDuringRun, Role: drill.RoleStopCondition, Condition: "core-api-closed", Cause: cause, Fix: fix,
			Polls: 4, Since: atp(10), GracePolls: 3, GraceSeconds: 5, At: at(18)},
		Rollbacks: []drill.RollbackRecord{rollback("rb-1", "force-openai", "breaker#openai", 0.5, 18.3, 18.6, 300)},
		Audit: []drill.AuditRef{
			{ID: "01JQ0000000000000000000011", At: at(0.8), Action: "breaker.force_open", Subject: "breaker#openai"},
			{ID: "01JQ0000000000000000000012", At: at(18.5), Action: "breaker.clear", Subject: "breaker#openai"},
		},
		Notices: []string{`stop condition "core-api-closed" could not be evaluated: ` + cause},
	}
	j.Hypothesis.AfterSkipped = ""
	for s := 1.0; s < 10; s += 2 {
		j.StopEvaluations = append(j.StopEvaluations, drill.StopEvaluation{At: at(s), Condition: "core-api-closed", Detail: "core-api: 2 closed"})
	}
	for s := 10.0; s <= 18; s += 2.5 {
		j.StopEvaluations = append(j.StopEvaluations, drill.StopEvaluation{At: at(s), Condition: "core-api-closed", Error: cause})
	}
	j.GaugeSamples = gauges("openai", 0.1, 9.1, 1, func(s float64) string {
		if s < 1 {
			return "closed"
		}
		return "forced_open"
	})
	return j
}

// Hostile strings: markup, an attribute break-out, Markdown links and
// images, autolinks, a terminal escape and a bidi override.
const (
	hScript = `<script>alert(1)</script>`
	hImg    = `"><img src=x onerror=alert(2)>`
	hLink   = `[click me](javascript:alert(3)) ![x](https://evil.example/x.png)`
	hAuto   = `see https://evil.example and www.evil.example <https://evil.example> @someone`
	hStyle  = `</style><script>alert(4)</script>`
	hTerm   = "red\x1b[31m text \u202eevil\u202c | cell | break\nline two"
)

// hostileJournal puts hostile text in every string a journal carries.
func hostileJournal() *drill.Journal {
	j := stoppedJournal()
	j.Drill.Name, j.Drill.Description, j.Drill.File = hScript, hImg, hLink
	j.Context, j.Store, j.Actor, j.Gauges, j.RunID = hImg, hAuto, hStyle, hLink, hScript
	j.Reason = hScript + hImg + hLink
	for i := range j.Steps {
		s := &j.Steps[i]
		s.ID, s.Name, s.Description, s.Detail, s.Error, s.Reason = hScript+s.ID, hImg, hLink, hAuto, hTerm, hScript+hLink
		s.Outputs = map[string]string{hScript: hImg, "link": hLink}
		s.Kind = hStyle
	}
	for i := range j.Rollbacks {
		r := &j.Rollbacks[i]
		r.Subject, r.Description, r.Detail, r.Step = hImg+r.ID, hScript, hLink, hAuto
	}
	r := &j.Rollbacks[0]
	r.Status, r.Error, r.EndedAt = drill.StatusFailed, hTerm, nil
	j.RollbacksOK = false
	j.Stop.Condition, j.Stop.Detail = hScript, hLink
	j.Stop.Alarms[0].Name, j.Stop.Alarms[0].Reason, j.Stop.Alarms[0].State = hImg, hScript+hLink, hAuto
	for i := range j.StopEvaluations {
		j.StopEvaluations[i].Condition, j.StopEvaluations[i].Detail = hScript, hImg
	}
	j.StopEvaluations[0].Error = hStyle
	for i := range j.GaugeSamples {
		j.GaugeSamples[i].Dependency = hImg
		j.GaugeSamples[i].Instances[0].Instance = hScript
		j.GaugeSamples[i].Instances[1].State = hStyle
	}
	j.GaugeSamples[3].Error = hLink
	j.Hypothesis.Before[0].Name, j.Hypothesis.Before[0].Detail, j.Hypothesis.Before[0].Error = hScript, hImg, hLink
	j.Hypothesis.AfterSkipped = hStyle
	j.Notices = []string{hScript, hImg, hLink, hAuto, hTerm}
	j.Audit[0].ID, j.Audit[0].Action, j.Audit[0].Subject = hScript, hImg, hLink
	j.Recoveries = []drill.RecoveryRecord{{At: at(25), Actor: hImg, Rollbacks: []string{hScript}, Detail: hLink}}
	// A guard that refused (the fields a refused or lost guard shows) and
	// the preflight's records; a fleet confirmation in a step's detail.
	j.Guard = &drill.GuardRecord{Phase: drill.GuardDuringRun, Role: hStyle, Condition: hScript, Cause: hImg + hScript + hTerm, Fix: hLink + hAuto,
		Polls: 3, Since: atp(5), GracePolls: 2, GraceSeconds: 4, At: at(9)}
	j.Preflight = []drill.CheckRecord{{Phase: hStyle, Name: hScript, Kind: hImg, Description: hLink, Detail: hAuto, Error: hTerm + hScript,
		Checks: 1, StartedAt: at(0), EndedAt: atp(0.1)}}
	j.Steps[0].Fleet = &drill.FleetRecord{Dependency: hScript, Goal: hImg, Confirmed: true, Summary: hLink + hTerm, ElapsedSeconds: 2, TimeoutSeconds: 45}
	j.Steps[1].Fleet = &drill.FleetRecord{Dependency: hStyle, Goal: hAuto, Summary: hScript + hImg, ElapsedSeconds: 45, TimeoutSeconds: 45}
	return j
}
