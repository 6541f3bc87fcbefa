package breaker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// TestForceRequestedWordsEveryRefusalForItsFlag holds the one check of a
// force-open's flags: each refusal is a usage error (exit 2) naming the
// flag and the fix, decided before anything is read (the service has no
// store).
func TestForceRequestedWordsEveryRefusalForItsFlag(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	ov := breaker.NewOverrides(nil, clocktest.NewFake(now)).WithDurations(breaker.DurationPolicy{Max: 2 * time.Hour})
	ok := breaker.ForceRequest{Reason: "incident", Dependencies: []string{"openai"}, For: time.Hour, Known: []string{"openai"}}
	for _, tc := range []struct {
		name string
		edit func(r *breaker.ForceRequest)
		want string
	}{
		{"no reason", func(r *breaker.ForceRequest) { r.Reason = " " }, "a reason is required: pass --reason"},
		{"for not positive", func(r *breaker.ForceRequest) { r.For = -time.Minute }, "--for -1m is not positive"},
		{"for too short", func(r *breaker.ForceRequest) { r.For = time.Second }, "use --for 5s or more"},
		{"for too long", func(r *breaker.ForceRequest) { r.For = 3 * time.Hour }, "--for 3h is over this context's max-override of 2h"},
		{"until unparsed", func(r *breaker.ForceRequest) { r.Until = "tomorrow" }, `--until "tomorrow" is not an RFC3339 time`},
		{"until past", func(r *breaker.ForceRequest) { r.Until = "2026-11-29T18:00:00Z" }, "is in the past: give a future time"},
		{"until too soon", func(r *breaker.ForceRequest) { r.Until = "2026-11-29T19:00:03Z" }, "give a time at least 5s away"},
		{"until too far", func(r *breaker.ForceRequest) { r.Until = "2026-11-29T23:00:00Z" }, "pick an earlier time"},
		{"no expiry unconfirmed", func(r *breaker.ForceRequest) { r.NoExpiry = true }, "add --yes to confirm"},
		{"unknown dependency", func(r *breaker.ForceRequest) { r.Dependencies = []string{"open-ai"} }, "or pass --allow-unknown"},
		{"named twice", func(r *breaker.ForceRequest) { r.Dependencies = []string{"openai", "openai"} }, "named twice"},
		{"invalid name", func(r *breaker.ForceRequest) { r.Dependencies = []string{"OpenAI!"}; r.AllowUnknown = true }, "invalid dependency name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ok
			tc.edit(&r)
			_, err := ov.ForceRequested(r)
			if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ForceRequested = %v (exit %d), want exit 2 with %q", err, exitcode.Of(err), tc.want)
			}
		})
	}
}

// TestForceRequestedIsTheChange checks what the command hands the lever
// service: the expiry from the service's clock, the context's names to
// check against (none under --allow-unknown), no expiry only when
// confirmed.
func TestForceRequestedIsTheChange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	ov := breaker.NewOverrides(nil, clocktest.NewFake(now))
	c, err := ov.ForceRequested(breaker.ForceRequest{Reason: "incident", Dependencies: []string{"openai"}, For: 30 * time.Minute,
		Overwrite: true, Known: []string{"openai"}})
	p, _ := c.Params.(breaker.ForceParams)
	if err != nil || c.Action != breaker.ActionForceOpen || len(c.Known) != 1 || p.For != 30*time.Minute ||
		!p.ExpiresAt.Equal(now.Add(30*time.Minute)) || !p.Overwrite {
		t.Errorf("--for 30m --overwrite: %+v, %+v, %v", c, p, err)
	}
	c, err = ov.ForceRequested(breaker.ForceRequest{Reason: "new dep", Dependencies: []string{"billing"}, NoExpiry: true, Yes: true,
		Known: []string{"openai"}, AllowUnknown: true})
	p, _ = c.Params.(breaker.ForceParams)
	if err != nil || c.Known != nil || !p.NoExpiry || !p.ExpiresAt.IsZero() {
		t.Errorf("--no-expiry --yes --allow-unknown: %+v, %+v, %v", c, p, err)
	}
}
