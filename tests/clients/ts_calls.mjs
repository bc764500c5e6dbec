// The official TypeScript MCP SDK makes a list of tool calls, in order, against a server it
// starts over stdio, and prints one JSON line with each result: whether it was an error, its
// text (cut to 60,000 characters: a whole state, whose tree the host keeps within 48,000) and
// its deskpilot diagnostic. For contracts that need no
// choreography beyond the calls themselves.
//
// Run by the tests (tests/mcp/real_clients.py run_ts_script):
//   node ts_calls.mjs '<config JSON>' '<calls JSON: [{"name": …, "arguments": {…}}, …]>'
//   config: {"transport": "stdio", "command": ".../deskpilot", "args": ["serve"], "env": {...}}
//   and optionally "textLimit": how much of each result's text is printed (60,000 by default)
// A call named "$sleep" ({"ms": N}) only waits (the app may change meanwhile: a menu it
// closes by itself), and gives no result line. A call named "$until" ({"pattern": REGEX,
// "timeoutMs"?, ...get_app_state's arguments}) calls get_app_state until its text matches
// (a multiline regex), and gives one result line, the last. An argument "$state" stands for
// the last state_id a result gave; "$element:TEXT" for the id of the last state's one tree
// line holding TEXT, e.g. `$element:button "Save"` (what an agent reads off the state);
// null when no line or several do. "$element@N:TEXT" reads it off the state result N
// (0-based) gave instead: an id an agent kept from an older state.

import { connectStdio, diagnosticOf, textOf } from "./sdk_kit.mjs";

const config = JSON.parse(process.argv[2]);
const calls = JSON.parse(process.argv[3]);

let lastState = null;
let lastTree = "";
const trees = []; // the tree text of result N, or null when it gave no state

function resolved(value) {
  if (value === "$state") return lastState;
  const older = typeof value === "string" ? value.match(/^\$element@(\d+):/) : null;
  if (older || (typeof value === "string" && value.startsWith("$element:"))) {
    const label = value.slice(older ? older[0].length : "$element:".length);
    const tree = older ? (trees[Number(older[1])] ?? "") : lastTree;
    const ids = tree
      .split("\n")
      .filter((line) => line.includes(label))
      .map((line) => line.match(/\[(\d+)\]\s*$/))
      .filter(Boolean);
    return ids.length === 1 ? Number(ids[0][1]) : null;
  }
  return value;
}

const client = await connectStdio(config, "deskpilot-ts-calls");
const results = [];
try {
  for (const { name, arguments: args } of calls) {
    if (name === "$sleep") {
      await new Promise((done) => setTimeout(done, args.ms));
      continue;
    }
    // "$until": get_app_state with these arguments, again every 300 ms until its text
    // matches `pattern` (a multiline regex) or `timeoutMs` (default 20,000) passes; one
    // result line, the last one (an app fills its window a moment after it changed)
    const until = name === "$until" ? args : null;
    const tool = until ? "get_app_state" : name;
    const { pattern, timeoutMs, ...toolArgs } = until ?? {};
    const given = Object.fromEntries(
      Object.entries(until ? toolArgs : (args ?? {})).map(([key, value]) => [key, resolved(value)]),
    );
    const t0 = performance.now();
    let result = await client.callTool({ name: tool, arguments: given });
    let text = textOf(result);
    while (until && !new RegExp(pattern, "m").test(text)) {
      if (performance.now() - t0 > (timeoutMs ?? 20000)) break;
      await new Promise((done) => setTimeout(done, 300));
      result = await client.callTool({ name: tool, arguments: given });
      text = textOf(result);
    }
    const state = text.match(/^state_id=(\S+)$/m)?.[1];
    if (state) {
      lastState = state;
      lastTree = text;
    }
    trees.push(state ? text : null);
    results.push({
      tool: until ? "$until" : name,
      arguments: given,
      ms: performance.now() - t0,
      isError: result.isError === true,
      diagnostic: diagnosticOf(text),
      text: text.slice(0, config.textLimit ?? 60000),
    });
  }
} finally {
  await client.close();
}
console.log(JSON.stringify({ results }));
