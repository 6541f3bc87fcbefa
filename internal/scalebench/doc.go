// Package scalebench holds the production-size benchmarks of koshactl's
// operator reads and lever round trips (docs/benchmarks/scale.md): tables
// of 0, 10k and 100k buckets with proportional audit records on moto,
// items examined counted by a proxy that reads DynamoDB's answers, and
// mutations through a toxiproxy link of 50 ms round trip (the tests that
// hold commands to their round trips use a 250 ms one: counts do not
// depend on it). It has no code outside its tests.
package scalebench
