// Package keys provides the chaos key sources koshactl reads and rotates:
// AWS Secrets Manager, a key file, an environment variable, and the local
// context's generated-on-first-use key file.
//
// Every source stores a key the same way: standard base64 of at least 32
// raw random bytes (see [chaos.DecodeKey]). Every source is a
// [chaos.Keyring] and a [Source]; those that can rotate are also a
// [Rotator].
//
// # Rotation
//
// Secrets Manager keeps two stages: AWSCURRENT signs, and verification
// accepts AWSCURRENT and AWSPREVIOUS, so rotating never breaks a header in
// flight (headers live at most 15 minutes; rotate no more often than that).
// The local source mimics this with a current and a previous file. Key files
// and environment variables hold one key and do not rotate.
//
// # Secrecy
//
// Keys never appear in errors, output or logs: errors name the source and
// the problem, never the content.
package keys
