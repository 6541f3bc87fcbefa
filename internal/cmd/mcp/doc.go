// Package mcp implements `koshactl mcp`: an MCP server on one context, over
// stdio or (with --listen) streamable HTTP on loopback with a bearer token.
// Agents read the fleet through the read tools, which return what the
// commands print with -o json, and propose lever changes through the
// proposal tools, which make change requests (internal/approval) that a
// person approves with `koshactl request approve`. No tool writes a lever,
// rotates a key or signs a chaos header. The domain-free rules every call
// follows (bounds, escaping, errors, logging, the token) are
// internal/mcpserver's; docs/mcp.md is generated from [Tools].
package mcp
