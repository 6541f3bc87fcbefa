// Package storetest provides the conformance suite every store.Store backend
// must pass, so code written against the contract behaves the same on the
// embedded store and on DynamoDB.
//
// A backend's test calls [Run] with a function that opens a fresh, empty
// store for one subtest:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "kosha.db"))
//			...
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite covers number and string round trips, every condition on absent
// and present items, deletes, prefix scans across pages and segments, context
// cancellation, and racing writers (exactly one IfAbsent winner; no lost
// update under compare-and-set increments).
package storetest
