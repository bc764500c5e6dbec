// What every test client script here needs of a tool result and of a stdio server: the
// result's text, its deskpilot diagnostic, and a client connected to a server it starts.
// One copy, so the scripts read results the same way.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

// the text parts of a tool result, joined
export function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

// the diagnostic JSON of a result's text (its last `deskpilot diagnostic: …` line), or null
export function diagnosticOf(text) {
  const line = text.split("\n").findLast((l) => l.startsWith("deskpilot diagnostic: "));
  return line ? JSON.parse(line.slice("deskpilot diagnostic: ".length)) : null;
}

// the server a config names over stdio: {"command", "args", "env"}; its stderr is ours
export function stdioTransport(config) {
  return new StdioClientTransport({
    command: config.command,
    args: config.args,
    env: config.env,
    stderr: "inherit",
  });
}

// a client named `name`, connected to the stdio server `config` names
export async function connectStdio(config, name) {
  const client = new Client({ name, version: "0" });
  await client.connect(stdioTransport(config));
  return client;
}
