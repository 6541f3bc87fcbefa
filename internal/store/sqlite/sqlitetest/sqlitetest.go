// Package sqlitetest opens embedded stores for tests: the SQLite
// counterpart of dynamotest.
package sqlitetest

import (
	"path/filepath"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// NewStore returns an empty store in a file of the test's temporary
// directory, closed (and the close checked) when the test ends.
func NewStore(tb testing.TB) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "kosha.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}
