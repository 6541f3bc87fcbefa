// Package drilltest holds what the tests of the drill packages share: an
// in-memory store with injected failures ([Store]), a fake fleet with its
// gauges ([Fleet]), an environment of services on them ([Env]) that builds
// run contexts and runs a drill's steps as the runner does, and the hostile
// values every sink, the journal, the reports and a shell command must
// carry as data.
package drilltest

// HostileValues are values a hostile HTTP server, table writer or
// environment could hand a drill.
var HostileValues = []string{
	"", "plain",
	`ok"; touch pwned; echo "`, "1$(touch pwned2)", "`touch pwned3`", "'; touch pwned4; '", `\`,
	"a\r\nX-Injected: 1", "a\nb", "a\rb", "nul\x00byte", "\x1b]0;title\x07", "\u202eevil", "\xff\xfe",
	"../../admin", "a/b?c=d&e=f#g", "x&admin=true", "%2e%2e%2fadmin", "%", "@evil.example", "evil.example/x", "h:1@evil",
	`"},"admin":true,"x":{"`, "\u2028", " spaces  around ", "+plus+",
}
