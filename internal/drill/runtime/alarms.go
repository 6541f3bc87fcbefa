package runtime

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/kosha-platform/koshactl/internal/metrics"
)

// AlarmCondition is an alarm condition of a drill. The run reads every
// alarm of the drill together, once per region and poll round, so the
// parser collects them (drill.Decoder.AddAlarm) and the run context batches
// their reads.
type AlarmCondition interface {
	Condition
	// AlarmTarget resolves the condition's references.
	AlarmTarget(rc *RunContext) (AlarmTarget, error)
}

// AlarmTarget is an alarm condition with its references resolved.
type AlarmTarget struct {
	Region string // "" is the default region
	Query  metrics.AlarmQuery
}

// RegionAlarms is one region's answer in one poll round.
type RegionAlarms struct {
	metrics.AlarmRead
	Region string
}

type alarmRoundKey struct{}

// alarmRound caches one poll round's read of each region: its answer, or
// the error it failed with.
type alarmRound struct {
	mu    sync.Mutex
	reads map[string]regionRead
}

type regionRead struct {
	alarms *RegionAlarms
	err    error
}

// WithAlarmRound starts a poll round: alarm conditions checked with the
// returned context share their DescribeAlarms calls.
func WithAlarmRound(ctx context.Context) context.Context {
	return context.WithValue(ctx, alarmRoundKey{}, &alarmRound{reads: map[string]regionRead{}})
}

// AlarmQueries groups the drill's alarm conditions by region, as the run
// asks for them (see [RunContext.ReadAlarms]). A condition whose
// references cannot be resolved yet (a step output of a step still to
// run) is left out; it fails on its own when checked.
func (rc *RunContext) AlarmQueries(ctx context.Context) (map[string]metrics.AlarmQuery, error) {
	def, err := rc.Deps.Alarms.DefaultRegion(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]metrics.AlarmQuery{}
	for _, c := range rc.Drill.Alarms() {
		t, err := c.(AlarmCondition).AlarmTarget(rc)
		if err != nil {
			continue
		}
		r := cmp.Or(t.Region, def)
		q := out[r]
		q.Names = append(q.Names, t.Query.Names...)
		q.Prefixes = append(q.Prefixes, t.Query.Prefixes...)
		out[r] = q
	}
	return out, nil
}

// ReadAlarms returns region's alarms ("" the default region) for this
// poll round: every alarm of the drill in region is read once per round
// ([WithAlarmRound]), the conditions evaluated in one round (all stop
// conditions of a monitor tick, one poll of a check) sharing one
// DescribeAlarms call, or for this call alone outside a round.
func (rc *RunContext) ReadAlarms(ctx context.Context, region string) (*RegionAlarms, error) {
	def, err := rc.Deps.Alarms.DefaultRegion(ctx)
	if err != nil {
		return nil, err
	}
	region = cmp.Or(region, def)
	round, _ := ctx.Value(alarmRoundKey{}).(*alarmRound)
	if round == nil {
		round = &alarmRound{reads: map[string]regionRead{}}
	}
	round.mu.Lock()
	defer round.mu.Unlock()
	if got, ok := round.reads[region]; ok {
		return got.alarms, got.err
	}
	qs, err := rc.AlarmQueries(ctx)
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
	res, err := rc.Deps.Alarms.Describe(ctx, ask, q)
	got := regionRead{err: err}
	if err == nil {
		got.alarms = &RegionAlarms{AlarmRead: res, Region: region}
	}
	round.reads[region] = got
	return got.alarms, got.err
}

// CheckAlarms resolves every alarm condition of the drill before the run
// acts: a set of names and prefixes that one DescribeAlarms request per
// region cannot cover makes the run invalid.
func (rc *RunContext) CheckAlarms(ctx context.Context) error {
	if len(rc.Drill.Alarms()) == 0 {
		return nil
	}
	if err := NeedService(rc.Deps.Alarms != nil, "CloudWatch alarm source"); err != nil {
		return err
	}
	qs, err := rc.AlarmQueries(ctx)
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
