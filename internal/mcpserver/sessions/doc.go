// Package sessions holds the bounds of the MCP server's HTTP sessions: the
// limits a context or a flag sets, their ranges and defaults. It imports no
// MCP SDK, so the commands that only check a context's settings (config
// set-context) do not link the server.
package sessions
