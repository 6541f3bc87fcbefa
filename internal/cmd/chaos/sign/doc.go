// Package sign implements `koshactl chaos sign`: mint a signed, expiring
// X-Kosha-Chaos header with the context's current chaos key, audit the mint,
// and print the header only once the audit record is written.
package sign
