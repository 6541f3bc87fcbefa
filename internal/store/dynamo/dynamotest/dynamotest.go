// Package dynamotest provides DynamoDB stores for tests: each on a fresh,
// initialized table of a dynalite server, so tests of packages built on the
// store (rate limiting, breaker overrides, chaos) can run against the real
// DynamoDB API without sharing state.
package dynamotest

import (
	"context"
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
)

var (
	tables  atomic.Int64
	invalid = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)
)

// TableName returns a table name unique within the test binary, derived from
// the test's name.
func TableName(tb testing.TB) string {
	name := invalid.ReplaceAllString(tb.Name(), "-")
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	return fmt.Sprintf("t%d-%s", tables.Add(1), name)
}

// NewStore returns a store on a fresh table of the dynalite at endpoint
// (start one with dynalite.Start or dynalite.StartMain), created with
// [dynamo.Store.Init].
func NewStore(tb testing.TB, endpoint string) *dynamo.Store {
	tb.Helper()
	s := dynamo.NewFromConfig(dynalite.Config(tb, endpoint), TableName(tb))
	if _, err := s.Init(context.Background()); err != nil {
		tb.Fatalf("init table for %s: %v", tb.Name(), err)
	}
	return s
}
