package factory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestLocalStoreCollectsExpiredItems: a local context's store is opened as
// the stand-in for DynamoDB's TTL, on the command's clock: an override that
// expired hours ago is gone after the next command that writes, while one
// still in force stays.
func TestLocalStoreCollectsExpiredItems(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "INC-1", "--for", "10m")
	e.Clock.Advance(3 * time.Hour)
	e.MustRun(0, "breaker", "force-open", "billing", "--reason", "INC-2", "--for", "1h", "--allow-unknown", "--yes")

	s, err := sqlite.Open(context.Background(), filepath.Join(e.StateDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.Get(context.Background(), "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the override that expired three hours ago: %v, want it collected (ErrNotFound)", err)
	}
	if _, err := s.Get(context.Background(), "breaker#billing"); err != nil {
		t.Errorf("the override in force: %v, want it kept", err)
	}
}
