package memstore_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}
