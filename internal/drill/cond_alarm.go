package drill

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/metrics"
)

// AlarmConditionKind is the alarm condition: CloudWatch alarms, by name or
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
type AlarmConditionKind struct{}

var _ ConditionKind = AlarmConditionKind{}

// Name implements ConditionKind.
func (AlarmConditionKind) Name() string { return "alarm" }

// Summary implements ConditionKind.
func (AlarmConditionKind) Summary() string {
	return "holds when a CloudWatch alarm (by name or name prefix) is in ALARM (state: OK: when none is); one DescribeAlarms call per poll for all of the drill's alarms"
}

// Decode implements ConditionKind.
func (AlarmConditionKind) Decode(d *Decoder, n *yaml.Node) Condition {
	m := d.Map(n, "alarm")
	if m == nil {
		return nil
	}
	m.RejectUnknown("name", "prefix", "region", "state", "insufficient_data")
	c := &alarmCondition{state: metrics.AlarmStateAlarm}
	ok := true
	c.names, ok = alarmTemplates(m, "name")
	prefixes, pok := alarmTemplates(m, "prefix")
	c.prefixes, ok = prefixes, ok && pok
	if ok && len(c.names) == 0 && len(c.prefixes) == 0 {
		m.d.Errorf(m.node, "alarm: give name (an alarm's name, or a list) or prefix (the start of their names)")
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
	d.alarms = append(d.alarms, c)
	return c
}

// alarmTemplates reads a field holding one name or a list of them.
func alarmTemplates(m *Map, key string) ([]Template, bool) {
	v := m.Get(key)
	if v == nil {
		return nil, true
	}
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	var out []Template
	ok := true
	for i, it := range items {
		t, tok := m.d.Template(it, fmt.Sprintf("%s: %s[%d]", m.what, key, i))
		if s, static := t.Static(); tok && static && (s == "" || len(s) > metrics.MaxAlarmNameLen) {
			m.d.Errorf(it, "%s: %s %q: an alarm name or prefix is 1-%d characters", m.what, key, s, metrics.MaxAlarmNameLen)
			tok = false
		}
		out, ok = append(out, t), ok && tok
	}
	return out, ok
}

type alarmCondition struct {
	names, prefixes []Template
	region          Template
	state           string
	insufficient    bool
}

// alarmTarget is an alarm condition with its references resolved.
type alarmTarget struct {
	region string // "" is the default region
	q      metrics.AlarmQuery
}

func (c *alarmCondition) target(rc *RunContext) (alarmTarget, error) {
	var t alarmTarget
	var err error
	if !c.region.IsZero() {
		if t.region, err = rc.Expand(c.region); err != nil {
			return t, err
		}
		if !regionRE.MatchString(t.region) {
			return t, fmt.Errorf("region %q is not an AWS region (like eu-west-1)", t.region)
		}
	}
	for _, n := range c.names {
		s, err := rc.Expand(n)
		if err != nil {
			return t, err
		}
		t.q.Names = append(t.q.Names, s)
	}
	for _, p := range c.prefixes {
		s, err := rc.Expand(p)
		if err != nil {
			return t, err
		}
		t.q.Prefixes = append(t.q.Prefixes, s)
	}
	return t, nil
}

func (c *alarmCondition) Describe(rc *RunContext) string {
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
func (c *alarmCondition) Check(ctx context.Context, rc *RunContext) (Observation, error) {
	if err := need(rc.Deps.Alarms != nil, "CloudWatch alarm source"); err != nil {
		return Observation{}, err
	}
	t, err := c.target(rc)
	if err != nil {
		return Observation{}, err
	}
	read, err := rc.alarmWatcher().read(ctx, rc, t.region)
	if err != nil {
		return Observation{}, err
	}
	var mine, fired []metrics.Alarm
	for _, a := range read.Alarms {
		if t.q.Matches(a.Name) {
			mine = append(mine, a)
		}
	}
	var missing []string
	for _, n := range t.q.Names {
		if !slices.ContainsFunc(mine, func(a metrics.Alarm) bool { return a.Name == n }) {
			missing = append(missing, n)
		}
	}
	for _, p := range t.q.Prefixes {
		if !slices.ContainsFunc(mine, func(a metrics.Alarm) bool { return strings.HasPrefix(a.Name, p) }) {
			missing = append(missing, p+"*")
		}
	}
	if len(missing) > 0 {
		return Observation{}, fmt.Errorf("no CloudWatch alarm matches %s in %s", strings.Join(missing, ", "), read.Region)
	}
	for _, a := range mine {
		if c.firing(a) {
			fired = append(fired, a)
		}
	}
	obs := Observation{Alarms: fired}
	if len(fired) == 0 {
		obs.Detail = fmt.Sprintf("%d alarm(s) in %s, none firing", len(mine), read.Region)
		obs.Holds = c.state == metrics.AlarmStateOK
		return obs, nil
	}
	var b strings.Builder
	for i, a := range fired {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s since %s", a.Name, a.State, a.Since.UTC().Format(time.RFC3339))
		if a.Reason != "" {
			fmt.Fprintf(&b, ": %s", a.Reason)
		}
	}
	obs.Detail = b.String()
	obs.Holds = c.state == metrics.AlarmStateAlarm
	if !obs.Holds {
		obs.Alarms = nil
	}
	return obs, nil
}

// alarmRead is one region's answer in one poll round.
type alarmRead struct {
	metrics.AlarmRead
	Region string
}

// alarmWatcher reads every alarm of the drill, per region, once per poll
// round: the conditions evaluated in one round (all stop conditions of a
// monitor tick, one poll of a check) share one DescribeAlarms call.
type alarmWatcher struct {
	conds []*alarmCondition

	mu sync.Mutex
	// calls counts DescribeAlarms calls, for tests and the journal.
	calls int
}

type alarmRoundKey struct{}

// alarmRound caches one poll round's reads by region.
type alarmRound struct {
	mu    sync.Mutex
	reads map[string]*alarmRead
	errs  map[string]error
}

// withAlarmRound starts a poll round: alarm conditions checked with the
// returned context share their DescribeAlarms calls.
func withAlarmRound(ctx context.Context) context.Context {
	return context.WithValue(ctx, alarmRoundKey{}, &alarmRound{reads: map[string]*alarmRead{}, errs: map[string]error{}})
}

func (rc *RunContext) alarmWatcher() *alarmWatcher {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.alarms == nil {
		rc.alarms = &alarmWatcher{conds: rc.Drill.alarms}
	}
	return rc.alarms
}

// queries groups the drill's alarm conditions by region. A condition whose
// references cannot be resolved yet (a step output of a step still to
// run) is left out; it fails on its own when checked.
func (w *alarmWatcher) queries(ctx context.Context, rc *RunContext) (map[string]metrics.AlarmQuery, error) {
	def, err := rc.Deps.Alarms.DefaultRegion(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]metrics.AlarmQuery{}
	for _, c := range w.conds {
		t, err := c.target(rc)
		if err != nil {
			continue
		}
		r := t.region
		if r == "" {
			r = def
		}
		q := out[r]
		q.Names = append(q.Names, t.q.Names...)
		q.Prefixes = append(q.Prefixes, t.q.Prefixes...)
		out[r] = q
	}
	return out, nil
}

// read returns region's alarms for this round: fetched once per round
// (ctx's), or for this call alone outside a round.
func (w *alarmWatcher) read(ctx context.Context, rc *RunContext, region string) (*alarmRead, error) {
	def, err := rc.Deps.Alarms.DefaultRegion(ctx)
	if err != nil {
		return nil, err
	}
	if region == "" {
		region = def
	}
	round, _ := ctx.Value(alarmRoundKey{}).(*alarmRound)
	if round == nil {
		round = &alarmRound{reads: map[string]*alarmRead{}, errs: map[string]error{}}
	}
	round.mu.Lock()
	defer round.mu.Unlock()
	if r, ok := round.reads[region]; ok {
		return r, nil
	}
	if err, ok := round.errs[region]; ok {
		return nil, err
	}
	qs, err := w.queries(ctx, rc)
	if err != nil {
		return nil, err
	}
	q := qs[region]
	if len(q.Names) == 0 && len(q.Prefixes) == 0 {
		return nil, fmt.Errorf("no alarm of the drill is in %s", region)
	}
	ask := region
	if ask == def {
		ask = "" // the context's own client: its region and endpoint
	}
	w.mu.Lock()
	w.calls++
	w.mu.Unlock()
	res, err := rc.Deps.Alarms.Describe(ctx, ask, q)
	if err != nil {
		round.errs[region] = err
		return nil, err
	}
	r := &alarmRead{AlarmRead: res, Region: region}
	round.reads[region] = r
	return r, nil
}

// checkAlarms resolves every alarm condition of the drill before the run
// acts: a set of names and prefixes that one DescribeAlarms request per
// region cannot cover makes the run invalid.
func checkAlarms(ctx context.Context, rc *RunContext) error {
	w := rc.alarmWatcher()
	if len(w.conds) == 0 {
		return nil
	}
	if err := need(rc.Deps.Alarms != nil, "CloudWatch alarm source"); err != nil {
		return err
	}
	qs, err := w.queries(ctx, rc)
	if err != nil {
		return err
	}
	for region, q := range qs {
		if _, err := metrics.AlarmRequest(q); err != nil {
			return fmt.Errorf("alarms in %s: %w", region, err)
		}
	}
	return nil
}

// AlarmCalls returns how many DescribeAlarms calls the run made.
func (rc *RunContext) AlarmCalls() int {
	w := rc.alarmWatcher()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls
}

// regionRE is the shape of an AWS region name.
var regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
