// Package bucketview is how the ratelimit commands show a bucket: its stable
// JSON shape (docs/contracts/cli-output.md) and the wait a client faces,
// rounded so it never reads early.
package bucketview
