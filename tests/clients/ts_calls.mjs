// The official TypeScript MCP SDK makes a list of tool calls, in order, against a server it
// starts over stdio, and prints one JSON line with each result: whether it was an error, its
// text (cut to 3,000 characters) and its deskpilot diagnostic. For contracts that need no
// choreography beyond the calls themselves.
//
// Run by the tests (tests/mcp/real_clients.py run_ts_script):
//   node ts_calls.mjs '<config JSON>' '<calls JSON: [{"name": …, "arguments": {…}}, …]>'
//   config: {"transport": "stdio", "command": ".../deskpilot", "args": ["serve"], "env": {...}}

import { connectStdio, diagnosticOf, textOf } from "./sdk_kit.mjs";

const config = JSON.parse(process.argv[2]);
const calls = JSON.parse(process.argv[3]);

const client = await connectStdio(config, "deskpilot-ts-calls");
const results = [];
try {
  for (const { name, arguments: args } of calls) {
    const t0 = performance.now();
    const result = await client.callTool({ name, arguments: args ?? {} });
    const text = textOf(result);
    results.push({
      tool: name,
      ms: performance.now() - t0,
      isError: result.isError === true,
      diagnostic: diagnosticOf(text),
      text: text.slice(0, 3000),
    });
  }
} finally {
  await client.close();
}
console.log(JSON.stringify({ results }));
