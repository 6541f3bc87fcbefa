// Package lostanswer sets up the tests of a write whose answer is lost: an
// in-process CLI on a DynamoDB context whose endpoint is a fault proxy in
// front of dynalite, and the audit actions recorded on a subject, so a test
// can tell a write confirmed by re-read and audited once. Tests only.
package lostanswer
