// Package mcpserver is the domain-free half of `koshactl mcp`: the table of
// tools an MCP server offers, and the rules every call follows whatever the
// tool does.
//
//   - A tool's description, title and schema are constants of the code:
//     nothing read from the table, the metrics or a file is ever placed in
//     them ([Tool]).
//   - A result is the tool's JSON document (the CLI's -o json) as
//     structured content, with a short text summary. Every string in it,
//     object keys included, is rendered by the textsafe rule (controls and
//     bidi marks as visible escapes) and bounded to [MaxString] characters
//     with a truncation marker ([Sanitize]): untrusted data stays data.
//   - A failure is a tool error (IsError) carrying the one-line message and
//     the exit code, and its name, the CLI would exit with ([ErrorResult]).
//     A panic in a tool is its call's tool error (exit 1), never the end of
//     the server; the log has its stack, not its value.
//   - Every call is logged on the server's log: the tool, the shape of its
//     arguments (keys and JSON types, never values) and the outcome.
//   - Over HTTP the server listens on loopback only ([CheckLoopback]) and
//     answers only requests carrying its bearer token, compared in constant
//     time ([Authorize]).
package mcpserver
