package gameday

import (
	"math"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/metrics"
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
			Before: []drill.CheckRecord{check(runner.PhaseBefore, "openai-closed", 0.1, 0.4, true, "openai: 2 instance(s): 2 closed")},
			After:  []drill.CheckRecord{check(runner.PhaseAfter, "openai-closed", 19.2, 21.3, true, "openai: 2 instance(s): 2 closed")},
		},
		Steps: []drill.StepRecord{
			step("force-openai", "breaker.force_open", drill.StatusPassed, 0.5, 0.9, "forced open until 2026-03-14T09:35:00Z", "rb-1"),
			step("drain-agent", "ratelimit.drain", drill.StatusPassed, 0.9, 1.2, "drained", "rb-2"),
			step("soak", "sleep", drill.StatusStopped, 1.2, 17.6, ""),
			step("verify", "assert", drill.StatusSkipped, -1, -1, ""),
		},
		Stop: &drill.StopRecord{Condition: "api-5xx", Detail: "alarm kosha-api-5xx is ALARM", At: at(17.5),
			Alarms: []metrics.Alarm{{Name: "kosha-api-5xx", State: "ALARM", Reason: "Threshold Crossed: 3 datapoints > 1", Since: at(17.1)}}},
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
		StartedAt: t0, Deadline: at(600), TimeoutSeconds: 600, Outcome: runner.OutcomeKilled,
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
		s.ID, s.Name, s.Description, s.Detail, s.Error = hScript+s.ID, hImg, hLink, hAuto, hTerm
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
	return j
}
