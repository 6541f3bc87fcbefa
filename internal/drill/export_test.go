package drill

// What the external tests (sink_test.go, which shares drilltest with the
// other drill packages) use of the package's insides.
var (
	HeaderControl = headerControl
	ValidHost     = validHost
)
