// Package dynalite provides a test helper that runs dynalite, a
// DynamoDB-API server, on a free loopback port for the duration of a test or
// of a whole test binary.
//
// dynalite is installed by `make test` (or `npm ci --prefix tools/dynalite`)
// into the repository's tools/dynalite/node_modules; this package finds it by
// walking up from the test's working directory to go.mod, and starts it with
// node directly, in its own process group, with table state changes made
// instant (--createTableMs 0 and friends). Every server is in-memory: nothing
// survives its stop. A small preload (preload.mjs) keeps the server alive when
// a client aborts a request, which dynalite 4.0.0 otherwise dies of.
//
// One server per test:
//
//	endpoint := dynalite.Start(t)
//
// One server for a whole package, from TestMain:
//
//	var endpoint string
//
//	func TestMain(m *testing.M) {
//		ep, stop, err := dynalite.StartMain()
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		endpoint = ep
//		code := m.Run()
//		stop()
//		os.Exit(code)
//	}
//
// dynalite is not DynamoDB: it lacks TransactWriteItems, UpdateTimeToLive and
// TTL expiry, and ignores ReturnValuesOnConditionCheckFailure. See
// docs/contracts/store.md.
package dynalite
