// Package chaos provides signed, expiring chaos fault-injection headers:
// the X-Kosha-Chaos wire format, minting, strict parsing and verification.
//
// The data plane honors a chaos header only if its HMAC-SHA256 signature
// is valid, it has not expired, its expiry is at most 15 minutes ahead, and
// the caller has the operator role (the last is the data plane's check).
// The wire format is specified in docs/contracts/chaos-header.md, with test
// vectors in docs/contracts/vectors/chaos-header.json (generated from this
// package by make vectors) that any implementation can run.
//
// # Pieces
//
//   - [Fields], [Target], [Fault] and [Prob] model what a header says; Prob
//     is fixed-point (1/10000) so every probability has one exact spelling.
//   - [SignHeader] turns a [Key] and Fields into a signed [Header];
//     [Parse] turns a value back into a Header, strictly, naming the
//     offending field in a [*FieldError] when it cannot.
//   - [Minter] mints headers for `koshactl chaos sign`: defaults, the hard
//     15-minute cap, a random jti, and a [MintRecord] for the audit log.
//   - [Verifier] checks a value (syntax, target, kid, signature, expiry,
//     cap, in that order). Verify is the allocation-free data-plane path;
//     Explain produces a per-check [Report] for `koshactl chaos verify`.
//   - [Key] is key material that refuses to print itself; a [Keyring]
//     supplies the current key and finds verification keys by id. Key
//     sources (Secrets Manager, key file, environment variable, local
//     generated key) live in internal/chaos/keys.
//
// # Failures
//
// Syntax errors are *FieldError (matching [ErrSyntax]); a failed check is a
// *CheckError matching one of [ErrSyntax], [ErrTargetNotAllowed],
// [ErrUnknownKID], [ErrBadSignature], [ErrExpired], [ErrTooFarAhead]. The
// data plane ignores any header that fails and audits the attempt with a
// [Rejection].
package chaos
