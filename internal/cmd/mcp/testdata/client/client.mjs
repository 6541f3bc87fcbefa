// An independent MCP client for koshactl mcp's end-to-end test: the
// TypeScript SDK's Client over stdio (it starts the server) or streamable
// HTTP. It lists the tools, reads the breaker status, proposes a
// force-open and asks the status of an unknown dependency, and prints what
// it got as one JSON document on stdout for the Go test to judge. With
// $MCP_CALLS (a JSON array of {name, arguments}) it makes those calls
// instead, in order, and prints {"calls": [...]}.
//
//   node client.mjs stdio KOSHACTL [ARGS...]
//   node client.mjs http URL    (the bearer token in $MCP_TOKEN)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
  });
} else {
  throw new Error(`mode ${mode}: use stdio or http`);
}

const client = new Client({ name: "koshactl-e2e", version: "1.0.0" });
await client.connect(transport);
const out = {};
const tools = await client.listTools();
out.tools = tools.tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? null }));
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return { isError: r.isError ?? false, structured: r.structuredContent ?? null, text: r.content?.[0]?.text ?? "" };
};
if (process.env.MCP_CALLS) {
  out.calls = [];
  for (const c of JSON.parse(process.env.MCP_CALLS)) {
    out.calls.push(await call(c.name, c.arguments));
  }
} else {
  out.status = await call("breaker_status", {});
  out.propose = await call("propose_force_open", { dependencies: ["core-api"], reason: "agent: core-api 5xx", for: "15m" });
  out.unknown = await call("breaker_status", { dependencies: ["no-such-dep"] });
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
