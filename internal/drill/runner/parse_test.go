package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
)

// TestParseProblems checks the exact FILE:LINE:COL: message of each class
// of problem drill validate reports.
func TestParseProblems(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown top-level key", `
name: x
timout: 1m
steps: [{sleep: 1s}]
`, []string{
			`t.yaml:1:1: drill: timeout is required`,
			`t.yaml:2:1: drill: unknown field "timout"; known fields are version, name, description, context, allow_protected, timeout, step_timeout, rollback_timeout, poll_interval, guard_grace, metrics_url, vars, hypothesis, stop_conditions, steps, rollback (did you mean "timeout"?)`,
		}},
		{"wrong types", `
name: [a]
timeout: 1m
allow_protected: "yes"
steps: {sleep: 1s}
`, []string{
			`t.yaml:1:7: drill: name must be a string, not a list`,
			`t.yaml:3:18: drill: allow_protected must be true or false, not a string "yes"`,
			`t.yaml:4:8: steps must be a list (items start with -), not a mapping`,
		}},
		{"unknown step kind with a suggestion", `
name: x
timeout: 1m
steps:
  - breaker.forceopen: {dependency: openai}
`, []string{
			`t.yaml:4:5: step "step-1": unknown step kind or field "breaker.forceopen"; step kinds are assert, breaker.clear, breaker.force-open, chaos.sign, http, ratelimit.drain, ratelimit.reset, ratelimit.set, shell, sleep, wait-for; fields are id, name, timeout, continue_on_failure, rollback (did you mean "breaker.force-open"?)`,
		}},
		{"missing required fields", `
name: x
timeout: 1m
steps:
  - id: a
    breaker.force-open: {for: 1m}
  - wait-for:
      breaker: {dependency: openai}
`, []string{
			`t.yaml:5:25: breaker.force-open: dependency is required`,
			`t.yaml:7:7: wait-for: timeout is required`,
			`t.yaml:7:16: breaker: state is required`,
		}},
		{"bad durations", `
name: x
timeout: 90
poll_interval: 5ms
steps:
  - sleep: -1s
  - breaker.force-open: {dependency: openai, for: 1 hour}
  - breaker.force-open: {dependency: openai, for: 1ns}
`, []string{
			`t.yaml:2:10: drill: timeout: "90" is not a duration: a bare number has no unit: write it with a unit, like 30s, 1m30s or 500ms`,
			`t.yaml:3:16: drill: poll_interval: 5ms is shorter than the 10ms minimum`,
			`t.yaml:5:12: sleep: -1s must be positive`,
			`t.yaml:6:51: breaker.force-open: for: "1 hour" is not a duration: write it with a unit, like 30s, 1m30s or 500ms`,
			`t.yaml:7:51: breaker.force-open: for: 1ns is under the 5s minimum: a shorter override lapses before the fleet reads it (the data plane's override cache period)`,
		}},
		{"references to steps and outputs", `
name: x
timeout: 1m
vars:
  a: ${vars.b}
  b: fine
hypothesis:
  - shell: echo ${steps.sign.jti}
steps:
  - id: sign
    chaos.sign: {target: openai, fault: error}
  - id: use
    shell: "echo ${steps.sign.jtii} ${steps.use.stdout} ${steps.late.stdout} ${steps.gone.x}"
  - id: late
    shell: "true"
    rollback:
      shell: echo ${steps.late.stdout} ${steps.sign.jti}
`, []string{
			`t.yaml:4:6: vars: a: ${vars.b}: no variable "b" is defined before this point (declare it under vars)`,
			`t.yaml:7:17: shell: ${steps.sign.jti}: the hypothesis cannot use step outputs: it runs when steps may not have run`,
			`t.yaml:12:18: shell: ${steps.sign.jtii}: step "sign" (chaos.sign) has no output "jtii"; it has header, header_name, jti, kid, exp, expires_at, target, fault (did you mean "jti"?)`,
			`t.yaml:12:37: shell: ${steps.use.stdout}: a step cannot use its own outputs (its rollback is registered before it runs)`,
			`t.yaml:12:57: shell: ${steps.late.stdout}: step "late" runs after this point; only earlier steps' outputs exist here`,
			`t.yaml:12:78: shell: ${steps.gone.x}: no step "gone" runs before this point (earlier steps: sign)`,
			`t.yaml:16:19: shell: ${steps.late.stdout}: a step cannot use its own outputs (its rollback is registered before it runs)`,
			`t.yaml:16:40: shell: ${steps.sign.jti}: a shell command takes no ${...} references (the value would become shell code): use "$DRILL_STEP_SIGN_JTI" from its environment`,
		}},
		{"timeouts that do not fit", `
name: x
timeout: 1m
step_timeout: 2m
rollback_timeout: 20m
steps:
  - timeout: 10s
    wait-for:
      breaker: {dependency: openai, state: open}
      timeout: 30s
  - sleep: 1m
  - timeout: 5m
    sleep: 1s
hypothesis:
  - breaker: {dependency: openai, state: open}
    within: 2m
    interval: 5m
`, []string{
			`t.yaml:3:15: drill: step_timeout: 2m0s is longer than the drill's timeout 1m0s`,
			`t.yaml:4:19: drill: rollback_timeout: 20m0s is longer than the 10m0s each rollback may take`,
			`t.yaml:9:16: wait-for: timeout: 30s is longer than the step's timeout 10s`,
			`t.yaml:10:12: sleep: 1m0s does not fit in the drill's timeout 1m0s`,
			`t.yaml:11:14: step "step-3": timeout: 5m0s is longer than the drill's timeout 1m0s`,
			`t.yaml:15:13: hypothesis[0]: within: 2m0s is longer than the drill's timeout 1m0s`,
			`t.yaml:16:15: hypothesis[0]: interval: 5m0s is not shorter than within 2m0s`,
		}},
		{"YAML syntax", "name: x\ntimeout: 1m\nsteps:\n  - sleep: [1s\n", []string{
			`t.yaml:4:1: YAML syntax: did not find expected ',' or ']' (in the { } or [ ] that starts here: close it, and quote any value holding ${...} or a colon)`,
		}},
		{"duplicate keys and merge keys", `
name: x
timeout: 1m
name: y
x-base: &base {dependency: openai}
steps:
  - breaker.clear:
      <<: *base
`, []string{
			`t.yaml:3:1: drill: key "name" is repeated (first at line 1)`,
			`t.yaml:7:7: breaker.clear: YAML merge keys (<<) are not supported: repeat the fields, or use an alias for a whole value`,
			`t.yaml:7:7: breaker.clear: dependency is required`,
		}},
		{"two documents", "name: x\ntimeout: 1m\nsteps: [{sleep: 1s}]\n---\nname: y\n", []string{
			`t.yaml:4:1: a drill file holds one YAML document; this is a second one (remove the --- separator or split the file)`,
		}},
		{"empty", "\n# nothing\n", []string{
			`t.yaml:1:1: drill file is empty: a drill needs at least name, timeout and steps`,
		}},
		{"conditions", `
name: x
timeout: 1m
stop_conditions:
  - name: two kinds
    http: {url: "http://x"}
    bucket: {client: c, admit: true}
  - breaker: {dependency: openai, state: closed, source: store}
  - bucket: {client: "a b"}
steps:
  - assert: {}
`, []string{
			`t.yaml:6:5: check "two kinds": has two condition kinds, "http" and "bucket": split it in two`,
			`t.yaml:7:42: breaker: state: "closed" is not a state of source store: use forced_open, not_forced`,
			`t.yaml:8:13: bucket: give admit, min_tokens or max_tokens`,
			`t.yaml:8:22: bucket: client: invalid client id "a b": a space at position 2 is not allowed; client ids are 1-128 characters of letters, digits and . _ : @ -`,
			`t.yaml:10:13: assert: no condition kind: add one of alarm, breaker, bucket, http, shell`,
		}},
		{"http expectations", `
name: x
timeout: 1m
steps:
  - http:
      url: ftp://x
      method: FETCH
      json: {a: 1}
      body: raw
      expect:
        status: 2xx
        json: {"a[x]": 1, b: {matches: "("}}
        max_latency: soon
      repeat: 0
`, []string{
			`t.yaml:5:12: http: url: "ftp://x" is not an http:// or https:// URL`,
			`t.yaml:6:15: http: method: "FETCH" is not an HTTP method: use one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`,
			`t.yaml:8:13: http: body: give json or body, not both`,
			`t.yaml:11:16: http: expect: json: [x] in JSON path "a[x]" is neither an array index nor a quoted key`,
			`t.yaml:11:40: http: expect: json: b: matches: "(" is not a regular expression: error parsing regexp: missing closing ): ` + "`(`",
			`t.yaml:12:22: http: expect: max_latency: "soon" is not a duration: write it with a unit, like 30s, 1m30s or 500ms`,
			`t.yaml:13:15: http: repeat: 0: send the request 1 to 1000 times`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, probs := drill.Parse(kinds.Builtin(), "t.yaml", []byte(strings.TrimPrefix(tc.src, "\n")))
			var got []string
			for _, p := range probs {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if d != nil {
				t.Error("a drill with problems was returned")
			}
		})
	}
}

func TestParseAcceptsAFullDrill(t *testing.T) {
	d, probs := drill.Parse(kinds.Builtin(), "t.yaml", []byte(`
version: 1
name: full
description: every field
context: staging
allow_protected: true
timeout: 5m
step_timeout: 30s
rollback_timeout: 1m
poll_interval: 100ms
metrics_url: ${vars.base}/metrics
x-auth: &auth
  Authorization: Bearer ${vars.token}
vars:
  base: ${env.BASE:-http://127.0.0.1:8787}
  token: {value: "${env.TOKEN}", secret: true}
hypothesis:
  - name: steady
    http: {url: "${vars.base}/healthz", headers: *auth}
    within: 10s
    interval: 1s
    timeout: 2s
stop_conditions:
  - breaker: {dependency: core-api, state: [open, forced_open], instances: any, min_instances: 2}
steps:
  - id: sign
    chaos.sign: {target: openai, fault: latency, ms: 250, p: 0.5, ttl: 2m}
  - id: call
    name: call with the header
    timeout: 10s
    continue_on_failure: true
    http:
      url: ${vars.base}/mcp
      headers: {X-Kosha-Chaos: "${steps.sign.header}"}
      json: {a: [1, "x ${steps.sign.jti}"]}
      expect: {status: [200, 4xx], json: {"$.a[0]": {gte: 1, lt: 2}}}
    rollback:
      - shell: echo "$DRILL_STEP_SIGN_JTI"
  - wait-for:
      bucket: {client: c, min_tokens: 1}
      timeout: 20s
      interval: 500ms
  - ratelimit.set: {client: c, tokens: 2.5}
rollback:
  - breaker.clear: {dependency: openai}
`))
	if len(probs) > 0 {
		t.Fatal(drilltest.Problems(probs))
	}
	if d.Name != "full" || d.Context != "staging" || !d.AllowProtected || d.Timeout != 5*time.Minute || d.StepTimeout != 30*time.Second ||
		d.RollbackTimeout != time.Minute || d.PollInterval != 100*time.Millisecond || len(d.Vars) != 2 || !d.Vars[1].Secret ||
		len(d.Hypothesis) != 1 || d.Hypothesis[0].Within != 10*time.Second || len(d.StopConditions) != 1 || len(d.Steps) != 4 ||
		len(d.Rollbacks) != 1 || d.Steps[1].Timeout != 10*time.Second || !d.Steps[1].ContinueOnFailure || len(d.Steps[1].Rollback) != 1 ||
		d.Steps[2].ID != "step-3" || d.Steps[1].Name != "call with the header" || d.Steps[0].Name != "sign" {
		t.Errorf("parsed drill = %+v", d)
	}
	// A drill without a step timeout uses the default, bounded by its timeout.
	short, probs := drill.Parse(kinds.Builtin(), "t.yaml", []byte("name: s\ntimeout: 20s\nsteps:\n  - sleep: 1s\n"))
	if len(probs) > 0 || short.StepTimeout != 20*time.Second || short.RollbackTimeout != drill.DefaultRollbackTimeout {
		t.Errorf("defaults: %+v %v", short, probs)
	}
}

func TestParseSurvivesAliasBombs(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("x-a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("name: bomb\ntimeout: 1m\nsteps:\n  - http: {url: \"http://x\", json: *a8}\n")
	_, probs := drill.Parse(kinds.Builtin(), "t.yaml", []byte(b.String()))
	if len(probs) != 1 || !strings.Contains(probs[0].Message, "aliased too often") {
		t.Errorf("problems = %v", probs)
	}
	// A self-referencing alias must not loop forever either.
	_, probs = drill.Parse(kinds.Builtin(), "t.yaml", []byte("name: loop\ntimeout: 1m\nsteps:\n  - http: {url: \"http://x\", json: &l [*l]}\n"))
	if len(probs) != 1 || !strings.Contains(probs[0].Message, "nested more than 64 levels deep") {
		t.Errorf("problems = %v", probs)
	}
}
