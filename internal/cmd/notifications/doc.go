// Package notifications holds the end-to-end tests of the notifications
// every mutating command sends (issue 24): the real command tree run
// in-process with internal/testutil/clitest, and the built binary, against
// a local webhook receiver and the SNS fake. It has no code of its own.
package notifications
