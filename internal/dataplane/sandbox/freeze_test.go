package sandbox_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// frozenGauges scrapes kosha_chaos_frozen, by instance.
func (h *harness) frozenGauges() map[string]float64 {
	h.t.Helper()
	out := map[string]float64{}
	mf := h.scrape()[freeze.PrometheusMetricName]
	if mf == nil {
		h.t.Fatalf("no %s in /metrics", freeze.PrometheusMetricName)
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "instance" {
				out[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// headerFaults is how many faults chaos headers injected so far.
func (h *harness) headerFaults() float64 {
	h.t.Helper()
	return h.metric("kosha_chaos_faults_total", map[string]string{"source": "header"})
}

// screenAll sends one screen_entity call carrying header to every
// instance and reports how many were deferred (the error fault).
func (h *harness) screenAll(n int, header string) (deferred int) {
	h.t.Helper()
	for i := 1; i <= n; i++ {
		if str(h.screen(operator, sandbox.InstanceName(i), header).Structured, "status") == "deferred" {
			deferred++
		}
	}
	return deferred
}

// The freeze's whole story on the sandbox: chaos headers inject faults;
// a freeze written to the store (with its audit record) reaches every
// instance (the gauge reads 1 on each) and from then no header injects
// anything, each refusal audited naming the freeze; after the lift a header
// minted before the freeze stays ignored, and one minted after the lift is
// honoured at once.
func TestFreezeStopsChaosFleetWide(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Instances = 3
	h := start(t, cfg)
	n := cfg.Instances

	before := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil)
	if d := h.screenAll(n, before); d != n {
		t.Fatalf("before the freeze, %d of %d calls with an error header were deferred", d, n)
	}
	if !allAre(h.frozenGauges(), n, 0) {
		t.Fatalf("kosha_chaos_frozen before any freeze: %v, want 0 everywhere", h.frozenGauges())
	}

	set := freezetest.Set(t, h.store, h.log, "alice@laptop", "real incident: payments failing", "INC-1", time.Now(), 0)
	wait.Until(t, "every instance reports the freeze", func() bool { return allAre(h.frozenGauges(), n, 1) })

	faults := h.headerFaults()
	during := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil) // a signer that ignores the freeze
	for _, hdr := range []string{before, during} {
		if d := h.screenAll(n, hdr); d != 0 {
			t.Errorf("while frozen, %d calls with a valid header were deferred", d)
		}
	}
	if got := h.headerFaults(); got != faults {
		t.Errorf("while frozen, header faults went from %v to %v", faults, got)
	}
	if v := h.metric("kosha_chaos_ignored_total", map[string]string{"reason": "freeze"}); v != float64(2*n) {
		t.Errorf("kosha_chaos_ignored_total{reason=freeze} = %v, want %d", v, 2*n)
	}
	var rec audit.Record
	wait.Until(t, "a chaos.ignored record naming the freeze", func() bool {
		for _, r := range h.records(sandbox.ActionChaosIgnored) {
			if strings.Contains(string(r.After), `"check":"freeze"`) {
				rec = r
				return true
			}
		}
		return false
	})
	var rej chaos.Rejection
	if err := json.Unmarshal(rec.After, &rej); err != nil {
		t.Fatal(err)
	}
	if rej.Freeze == nil || rej.Freeze.Ref != "INC-1" || rej.Freeze.Actor != "alice@laptop" || rej.Freeze.WriteID != set.WriteID ||
		rej.Field != "" || !strings.Contains(rej.Reason, "frozen by alice@laptop (INC-1)") || rej.IAT == 0 {
		t.Errorf("the refusal's record does not name the freeze: %+v", rej)
	}
	if strings.Contains(string(rec.After), before[strings.LastIndex(before, "sig=")+4:]) {
		t.Error("the refusal's record holds the header's signature")
	}

	lifted := freezetest.Lift(t, h.store, h.log, "bob@laptop", "not us", time.Now())
	wait.Until(t, "every instance reports the lift", func() bool { return allAre(h.frozenGauges(), n, 0) })
	for _, hdr := range []string{before, during} {
		if d := h.screenAll(n, hdr); d != 0 {
			t.Errorf("after the lift, %d calls with a header minted before it were deferred", d)
		}
	}
	if got := h.headerFaults(); got != faults {
		t.Errorf("after the lift, pre-lift headers injected faults (%v to %v)", faults, got)
	}
	// Minted after the lift (the next whole second: chaos sign waits for
	// it, freeze.CheckMint), honoured at once on every instance.
	after := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, clocktest.NewFake(lifted.LiftedAt.Truncate(time.Second).Add(time.Second)))
	if d := h.screenAll(n, after); d != n {
		t.Errorf("after the lift, %d of %d calls with a header minted after it were deferred", d, n)
	}
	if got := h.headerFaults(); got <= faults {
		t.Errorf("a header minted after the lift injected nothing (faults %v)", got)
	}
}

// An instance that does not obey the store (the ignore-overrides knob)
// reports 0 while the others report 1, and still honours headers: what
// `freeze --wait` names. The simulators' own knobs inject nothing while
// the fleet is frozen.
func TestFreezeDisobedientInstanceAndKnobs(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Instances = 3
	cfg.IgnoreOverrides = []int{3}
	h := start(t, cfg)
	hdr := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil)
	freezetest.Set(t, h.store, h.log, "alice@laptop", "incident", "INC-2", time.Now(), time.Hour)
	wait.Until(t, "gw-1 and gw-2 report the freeze", func() bool {
		g := h.frozenGauges()
		return g["gw-1"] == 1 && g["gw-2"] == 1
	})
	if g := h.frozenGauges(); g["gw-3"] != 0 {
		t.Errorf("the instance that ignores the store reports %v", g["gw-3"])
	}
	if str(h.screen(operator, "gw-3", hdr).Structured, "status") != "deferred" {
		t.Error("the disobedient instance refused a header: it is meant to show what --wait names")
	}
	if str(h.screen(operator, "gw-1", hdr).Structured, "status") != "clear" {
		t.Error("a frozen instance honoured a header")
	}
	st := h.srv.Status()
	if !st.Instances[0].ChaosFrozen || !strings.Contains(st.Instances[0].Freeze, "INC-2") || st.Instances[2].ChaosFrozen {
		t.Errorf("/status: %+v", st.Instances)
	}

	// A knob set while frozen injects nothing, and says so.
	sim, _ := h.srv.Sim(sandbox.ScreeningSim)
	if err := sim.SetKnob(sandbox.Knob{Fault: chaos.FaultError, P: 1}); err != nil {
		t.Fatal(err)
	}
	before := h.metric("kosha_chaos_faults_total", map[string]string{"source": "admin"})
	if r := h.screen(operator, "gw-1", ""); str(r.Structured, "status") != "clear" {
		t.Errorf("a knob injected a fault while frozen: %s", describe(r))
	}
	if got := h.metric("kosha_chaos_faults_total", map[string]string{"source": "admin"}); got != before {
		t.Errorf("knob faults went from %v to %v while frozen", before, got)
	}
}
