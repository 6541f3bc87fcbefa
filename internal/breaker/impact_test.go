package breaker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
)

// A force and its clear through a lever service that tells impact: the
// report carries the matrix's impact of the force, its announcement says
// it, and each record keeps its dependency's part.
func TestAForceAndItsClearCarryTheirImpact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLevers(sqlitetest.NewStore(t), clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)))
	svc := l.svc().WithImpact(&impact.Assessor{})
	rep, err := svc.Change(ctx, forceReq{Dependency: impact.ScreeningSim, Reason: "screenings slow", Actor: "al", For: 30 * time.Minute}.change())
	if err != nil {
		t.Fatal(err)
	}
	r, ok := rep.Impact.(*impact.Report)
	if !ok || len(r.Tools) != 1 || r.Tools[0].Tool != impact.ToolScreenEntity || r.Tools[0].Behaviour != impact.Deferred || r.ForSeconds != 1800 {
		t.Fatalf("the force's impact %+v, want screen_entity deferred for 30m", rep.Impact)
	}
	if rep.Event == nil || !strings.Contains(strings.Join(rep.Event.Impact, "\n"), "screen_entity deferred") {
		t.Errorf("the announcement %+v does not say screen_entity is deferred", rep.Event)
	}
	if _, err := svc.Change(ctx, lever.Change{Action: breaker.ActionClear, Targets: []string{impact.ScreeningSim}, Reason: "back", Actor: "al"}); err != nil {
		t.Fatal(err)
	}
	recs, err := l.log.(*audit.Log).List(ctx, audit.Query{Subject: breaker.OverrideKey(impact.ScreeningSim)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range recs.Records {
		im := rec.Impact
		if im == nil || im.Dependency != impact.ScreeningSim || !im.Obeyed || len(im.Tools) != 1 {
			t.Errorf("%s's record's impact %+v", rec.Action, im)
			continue
		}
		got = append(got, rec.Action+" "+im.Tools[0].Tool+" "+im.Tools[0].Behaviour)
	}
	slices.Sort(got)
	if want := breaker.ActionClear + " screen_entity deferred," + breaker.ActionForceOpen + " screen_entity deferred"; strings.Join(got, ",") != want {
		t.Errorf("records' impacts %q, want %q", got, want)
	}
}

// blockingAssessor tells no impact until released: a rate source that
// does not answer.
type blockingAssessor struct{ release chan struct{} }

func (b blockingAssessor) Assess(context.Context, lever.Forces) lever.Impact {
	<-b.release
	return nil
}

// A change the plan refuses after reading (a clear of a dependency the
// context does not know) is refused at once: it does not wait for the
// impact's rate source. Were it to wait, every goroutine of the bubble
// would be blocked and synctest would fail the test.
func TestARefusedChangeDoesNotWaitForItsImpact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLevers(sqlitetest.NewStore(t), clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)))
		a := blockingAssessor{release: make(chan struct{})}
		defer close(a.release)
		_, err := l.svc().WithImpact(a).Change(context.Background(), lever.Change{Action: breaker.ActionClear, Targets: []string{"nope"}, Reason: "r",
			Actor: "al", Known: []string{impact.OpenAI}})
		if err == nil {
			t.Fatal("a clear of an unknown dependency was not refused")
		}
	})
}
