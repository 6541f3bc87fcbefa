package kinds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lazyre"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// alarmConditionKind is the alarm condition: CloudWatch alarms, by name or
// name prefix, as AWS FIS stop conditions and AppConfig rollbacks use them.
//
//	alarm:
//	  name: api-5xx            # or a list; and/or
//	  prefix: kosha-prod-      # every alarm whose name starts so (or a list)
//	  region: eu-west-1        # default: the context's CloudWatch region
//	  state: ALARM             # ALARM (default): holds when one is firing;
//	                           # OK: holds when none is
//	  insufficient_data: false # true: INSUFFICIENT_DATA counts as firing
//
// All alarm conditions of a drill are read together: one DescribeAlarms
// call per region per poll (see [metrics.AlarmRequest] for how names and
// prefixes share it).
var alarmConditionKind = conditionKind{name: "alarm",
	summary: "holds when a CloudWatch alarm (by name or name prefix) is in ALARM (state: OK: when none is); one DescribeAlarms call per poll for all of the drill's alarms",
	decode:  decodeAlarmCondition}

func decodeAlarmCondition(d *drill.Decoder, n *yaml.Node) drill.Spec {
	m := d.Fields(n, "alarm", "name", "prefix", "region", "state", "insufficient_data")
	if m == nil {
		return nil
	}
	c := &alarmCondition{state: metrics.AlarmStateAlarm}
	ok := true
	c.names, ok = alarmTemplates(m, "name")
	prefixes, pok := alarmTemplates(m, "prefix")
	c.prefixes, ok = prefixes, ok && pok
	if ok && len(c.names) == 0 && len(c.prefixes) == 0 {
		m.Decoder().Errorf(m.Node(), "alarm: give name (an alarm's name, or a list) or prefix (the start of their names)")
		ok = false
	}
	if m.Has("region") {
		var rok bool
		c.region, rok = m.Template("region", false)
		if s, static := c.region.Static(); static && rok && !regionRE.MatchString(s) {
			m.Errorf("region", "%q is not an AWS region (like eu-west-1)", s)
			rok = false
		}
		ok = ok && rok
	}
	if s, present := m.String("state", false); present {
		switch strings.ToUpper(s) {
		case metrics.AlarmStateAlarm, metrics.AlarmStateOK:
			c.state = strings.ToUpper(s)
		default:
			m.Errorf("state", "%q: use ALARM (holds when an alarm fires) or OK (holds when none does)", s)
			ok = false
		}
	}
	c.insufficient, _ = m.Bool("insufficient_data")
	if !ok {
		return nil
	}
	d.AddAlarm(c)
	return c
}

// alarmTemplates reads a field holding one name or a list of them.
func alarmTemplates(m *drill.Map, key string) ([]drill.Template, bool) {
	v := m.Get(key)
	if v == nil {
		return nil, true
	}
	var out []drill.Template
	ok := true
	for i, it := range drill.Items(v) {
		t, tok := m.Decoder().Template(it, fmt.Sprintf("%s: %s[%d]", m.What(), key, i))
		if s, static := t.Static(); tok && static && (s == "" || len(s) > metrics.MaxAlarmNameLen) {
			m.Decoder().Errorf(it, "%s: %s %q: an alarm name or prefix is 1-%d characters", m.What(), key, s, metrics.MaxAlarmNameLen)
			tok = false
		}
		out, ok = append(out, t), ok && tok
	}
	return out, ok
}

type alarmCondition struct {
	names, prefixes []drill.Template
	region          drill.Template
	state           string
	insufficient    bool
}

// AlarmTarget implements AlarmCondition.
func (c *alarmCondition) AlarmTarget(rc *runtime.RunContext) (runtime.AlarmTarget, error) {
	var t runtime.AlarmTarget
	var err error
	if !c.region.IsZero() {
		if t.Region, err = rc.Expand(c.region); err != nil {
			return t, err
		}
		if !regionRE.MatchString(t.Region) {
			return t, fmt.Errorf("region %q is not an AWS region (like eu-west-1)", t.Region)
		}
	}
	if t.Query.Names, err = expandAll(rc, c.names); err != nil {
		return t, err
	}
	t.Query.Prefixes, err = expandAll(rc, c.prefixes)
	return t, err
}

func expandAll(rc *runtime.RunContext, ts []drill.Template) ([]string, error) {
	var out []string
	for _, t := range ts {
		s, err := rc.Expand(t)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *alarmCondition) Describe(rc *runtime.RunContext) string {
	var parts []string
	for _, n := range c.names {
		parts = append(parts, rc.Describe(n))
	}
	for _, p := range c.prefixes {
		parts = append(parts, rc.Describe(p)+"*")
	}
	what := "alarm " + strings.Join(parts, ", ")
	if !c.region.IsZero() {
		what += " in " + rc.Describe(c.region)
	}
	firing := "ALARM"
	if c.insufficient {
		firing = "ALARM or INSUFFICIENT_DATA"
	}
	if c.state == metrics.AlarmStateOK {
		return what + " not in " + firing
	}
	return what + " in " + firing
}

func (c *alarmCondition) firing(a metrics.Alarm) bool {
	return a.State == metrics.AlarmStateAlarm || (c.insufficient && a.State == metrics.AlarmStateInsufficientData)
}

// Check reads the alarms (through the run's alarm watcher: one call per
// region per poll for every alarm of the drill). A name or prefix that
// matches no alarm is an evaluation error, never "not firing": a typo must
// not silently disarm a stop condition.
func (c *alarmCondition) Check(ctx context.Context, rc *runtime.RunContext) (runtime.Observation, error) {
	if err := runtime.NeedService(rc.Deps.Alarms != nil, "CloudWatch alarm source"); err != nil {
		return runtime.Observation{}, err
	}
	t, err := c.AlarmTarget(rc)
	if err != nil {
		return runtime.Observation{}, err
	}
	read, err := rc.ReadAlarms(ctx, t.Region)
	if errors.Is(err, metrics.ErrDenied) {
		return runtime.Observation{}, runtime.WithFix(err, nil,
			`grant cloudwatch:DescribeAlarms on Resource "*" to the role running the drill (koshactl iam policy --role drill-runner)`)
	}
	if err != nil {
		return runtime.Observation{}, err
	}
	mine := slices.DeleteFunc(slices.Clone(read.Alarms), func(a metrics.Alarm) bool { return !t.Query.Matches(a.Name) })
	var missing []string
	for _, n := range t.Query.Names {
		if !slices.ContainsFunc(mine, func(a metrics.Alarm) bool { return a.Name == n }) {
			missing = append(missing, n)
		}
	}
	for _, p := range t.Query.Prefixes {
		if !slices.ContainsFunc(mine, func(a metrics.Alarm) bool { return strings.HasPrefix(a.Name, p) }) {
			missing = append(missing, p+"*")
		}
	}
	if len(missing) > 0 {
		return runtime.Observation{}, runtime.WithFix(fmt.Errorf("no CloudWatch alarm matches %s in %s", strings.Join(missing, ", "), read.Region),
			runtime.ErrNoMatch, fmt.Sprintf("check the alarm's name or prefix and region (aws cloudwatch describe-alarms --region %s lists them), or create the alarm", read.Region))
	}
	var obs runtime.Observation
	for _, a := range mine {
		if c.firing(a) {
			obs.Alarms = append(obs.Alarms, drill.Alarm(a))
		}
	}
	if len(obs.Alarms) == 0 {
		obs.Detail = fmt.Sprintf("%s in %s, none firing", human.Count(int64(len(mine)), "alarm"), read.Region)
		obs.Holds = c.state == metrics.AlarmStateOK
		return obs, nil
	}
	var fired []string
	for _, a := range obs.Alarms {
		s := fmt.Sprintf("%s %s since %s", a.Name, a.State, a.Since.UTC().Format(time.RFC3339))
		if a.Reason != "" {
			s += ": " + a.Reason
		}
		fired = append(fired, s)
	}
	obs.Detail = strings.Join(fired, "; ")
	obs.Holds = c.state == metrics.AlarmStateAlarm
	if !obs.Holds {
		obs.Alarms = nil
	}
	return obs, nil
}

// regionRE is the shape of an AWS region name.
var regionRE = lazyre.New(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
