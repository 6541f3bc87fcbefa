// Package koshabin hands the end-to-end tests the koshactl binary they run
// as an operator would.
//
// make test builds it once, before go test, with -race (so it reuses the
// packages go test compiles for the tests, and a data race in the real
// binary fails its test with exit code 66), and names it in
// KOSHACTL_TEST_BINARY. Before, four packages each linked their own, without
// -race: on a fresh clone that compiled the whole tree a second time.
// Without the variable (go test run by hand) [Path] builds one for the test,
// with the race detector when the test binary has it. Either way the full
// program, koshactl-full, is beside it: koshactl hands it what it does not
// link (internal/cmd/handoff).
package koshabin
