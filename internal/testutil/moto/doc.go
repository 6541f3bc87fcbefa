// Package moto provides a test helper that runs moto's server (moto_server),
// an AWS emulator that serves DynamoDB (transactions, GSIs, TTL settings)
// along with Secrets Manager, SNS, SQS, STS and IAM, on a free loopback port
// for the duration of a test or of a whole test binary.
//
// moto_server is found as $KOSHACTL_MOTO_SERVER when that is set, else on
// PATH; `make test-deps` installs it (`pip install 'moto[server]==5.2.1'`)
// when it is missing. Each server runs in its own process group and is
// in-memory: nothing survives its stop. Its per-request access log is
// dropped; its banner and any errors are kept and shown when it dies.
//
// The endpoint is a front on another loopback port that passes moto one
// DynamoDB request at a time: moto checks a write's condition and stores the
// item without a lock, so concurrent conditional writes of one item could
// both succeed, where DynamoDB applies them one after the other.
//
// One server per test:
//
//	endpoint := moto.Start(t)
//
// One server for a whole package, from TestMain:
//
//	var endpoint string
//
//	func TestMain(m *testing.M) { moto.RunMain(m, &endpoint) }
//
// moto keeps state per region and account, as AWS does: clients sharing a
// server sign for [Region] with the same credentials ([Options]).
//
// moto is not DynamoDB: it accepts any credentials, never throttles, never
// expires items by TTL, and ignores ClientRequestToken, so a retried
// TransactWriteItems runs again instead of being recognized as the same
// request. See docs/contracts/store.md.
package moto
