package breaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// The hostile table on a real DynamoDB API: items written through the AWS
// SDK by another tool, then read by the real command tree.
func TestHostileTableOnDynamoDBIsShownEscaped(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")
	e.MustRun(0, "store", "init")

	ctx := context.Background()
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
	o := breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Reason: hostileReason, Actor: hostileActor,
		CreatedAt: clitest.Epoch, ExpiresAt: clitest.Epoch.Add(time.Hour), Version: 1}
	if err := s.Put(ctx, o.Item(), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.NewLog(s, e.Clock, "dev").Append(ctx, audit.Entry{Actor: hostileActor, Action: "breaker.force-open",
		Subject: "breaker#openai", Reason: hostileReason, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	// A bucket whose pk retitles the terminal.
	if err := s.Put(ctx, store.Item{store.PK: "rl#evil\x1b]0;title\x07", "tokens": 1.0, "updated_at": clitest.Epoch.UnixMilli()}, store.Always()); err != nil {
		t.Fatal(err)
	}

	assertShown(t, "breaker list", e.MustRun(0, "breaker", "list"), hostileShown, nil)
	assertShown(t, "breaker get", e.MustRun(0, "breaker", "get", "openai"), hostileShown, nil)
	assertShown(t, "audit list", e.MustRun(0, "audit", "list"), hostileShown, nil)
	assertShown(t, "ratelimit list", e.MustRun(0, "ratelimit", "list"), []string{`evil\x1b]0;title\x07  1/20`}, nil)
	r := e.MustRun(exitcode.Conflict, "breaker", "force-open", "openai", "--reason", "mine")
	assertShown(t, "conflict", r, nil, []string{hostileShown[1]})
	r = e.MustRun(0, "breaker", "clear", "openai")
	assertShown(t, "clear", r, []string{"set by " + hostileShown[1]}, nil)
}
