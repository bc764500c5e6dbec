// The official TypeScript MCP SDK drives deskpilot the way an agent would: read the state,
// then chain actions, each on the state_id and element ids the previous result returned:
// get_app_state(gnome-calculator) → click 7 → × → 6 → =, then `status`.
//
// Run by tests/mcp/test_real_clients.py:  node ts_chain.mjs '<config JSON>'
//   {"transport": "stdio", "command": ".../deskpilot", "args": ["serve"], "env": {...}}
//   {"transport": "http", "url": "http://127.0.0.1:N/mcp"}   (bearer token in $DP_TS_TOKEN)
// Prints one JSON line with what it saw; the test asserts on it. Exits non-zero only when it
// could not connect or a call threw (a tool error is a result, reported, not thrown).

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { diagnosticOf, stdioTransport, textOf } from "./sdk_kit.mjs";

const LABELS = ["7 7", "× ×", "6 6", "= ="];
const EXPECT = [
  {
    kind: "accessibility",
    selector: { role: "textField" },
    assertion: "value_equals",
    expected: "42",
  },
  { kind: "visual", assertion: "text_present", text: "this text is not on screen" },
];

const config = JSON.parse(process.argv[2]);

function stateIdOf(text) {
  return text.match(/^state_id=(\S+)$/m)?.[1] ?? null;
}

// the id at the end of the one tree line naming the button, e.g. `- button "7 7" [13]`
function elementIdOf(text, label) {
  const ids = text
    .split("\n")
    .filter((line) => line.includes(`"${label}"`))
    .map((line) => line.match(/\[(\d+)\]\s*$/))
    .filter(Boolean)
    .map((m) => Number(m[1]));
  if (ids.length !== 1) throw new Error(`expected one element "${label}", found ${ids.length}`);
  return ids[0];
}

function displayOf(text) {
  return text.match(/textField = "([^"]*)"[^\n]*\[\d+\]$/m)?.[1] ?? null;
}


function transportFor(cfg) {
  if (cfg.transport === "stdio") {
    return stdioTransport(cfg);
  }
  const token = process.env.DP_TS_TOKEN;
  return new StreamableHTTPClientTransport(new URL(cfg.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

const transport = transportFor(config);
const client = new Client({ name: "deskpilot-ts-chain", version: "0" });
// the negotiated version is the initialize result's; Client keeps only the server info, so
// look at the result on its way through
let negotiated = null;
const request = client.request.bind(client);
client.request = async (req, schema, options) => {
  const result = await request(req, schema, options);
  if (req.method === "initialize") negotiated = result.protocolVersion;
  return result;
};

const report = {
  sdk: JSON.parse(
    readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url)),
  ).version,
  node: process.version,
  transport: config.transport,
  // the version the SDK offers in initialize, and the one the server answered with
  offeredProtocolVersion: LATEST_PROTOCOL_VERSION,
  protocolVersion: null,
  transportProtocolVersion: null,
  server: null,
  sessionId: null,
  serverPid: null,
  calls: [],
  steps: [],
  display: null,
  status: null,
};

await client.connect(transport);
report.protocolVersion = negotiated;
report.server = client.getServerVersion() ?? null;
report.transportProtocolVersion = transport.protocolVersion ?? null;
report.sessionId = transport.sessionId ?? null;
report.serverPid = transport.pid ?? null;

async function call(name, args) {
  report.calls.push(name);
  const result = await client.callTool({ name, arguments: args });
  const text = textOf(result);
  const step = {
    tool: name,
    isError: result.isError === true,
    stateId: stateIdOf(text),
    display: displayOf(text),
    diagnostic: diagnosticOf(text),
    hasImage: (result.content ?? []).some((c) => c.type === "image"),
  };
  if (step.isError || step.display === null) step.text = text.slice(0, 4000);
  report.steps.push(step);
  return text;
}

try {
  let text = await call("get_app_state", { app: "gnome-calculator" });
  for (const label of LABELS) {
    if (report.steps.at(-1).isError) break;
    const args = { state_id: stateIdOf(text), element_id: elementIdOf(text, label) };
    // the last click says what it should do: the display reads 42, checked on the state
    // the click left, in the same call (no extra observe)
    if (label === "= =") args.expect = EXPECT;
    text = await call("click", args);
  }
  report.display = displayOf(text);
  const status = await client.callTool({ name: "status", arguments: {} });
  const statusText = textOf(status);
  report.status = JSON.parse(statusText.slice(0, statusText.indexOf("\n\ndeskpilot diagnostic:")));
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
