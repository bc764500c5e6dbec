// The official TypeScript MCP SDK delegates a whole goal the way Claude Code or pi would:
// start_task on an app with success criteria, then wait_for_completion, then get_status.
//
// Run by tests/operator/test_ts_client.py:  node ts_task.mjs '<config JSON>'
//   {"command": ".../deskpilot", "args": ["serve"], "env": {...}, "task": {start_task args}}
// Prints one JSON line with what it saw; a tool error is a result, reported, not thrown.

import { connectStdio, textOf } from "./sdk_kit.mjs";

const config = JSON.parse(process.argv[2]);

// the JSON body of a result (the text before the diagnostic line)
function bodyOf(result) {
  const text = textOf(result);
  const end = text.indexOf("\n\ndeskpilot diagnostic:");
  try {
    return JSON.parse(end >= 0 ? text.slice(0, end) : text);
  } catch {
    return { unparsed: text.slice(0, 2000) };
  }
}

const report = { tools: [], start: null, wait: null, status: null, errors: [] };

const client = await connectStdio(config, "deskpilot-ts-task");
try {
  report.tools = (await client.listTools()).tools.map((t) => t.name);
  const start = await client.callTool({ name: "start_task", arguments: config.task });
  report.start = { isError: start.isError === true, body: bodyOf(start) };
  if (!report.start.isError) {
    const taskId = report.start.body.taskId;
    const wait = await client.callTool({
      name: "wait_for_completion",
      arguments: { task_id: taskId, timeout_ms: 90000 },
    });
    report.wait = { isError: wait.isError === true, body: bodyOf(wait) };
    const status = await client.callTool({ name: "get_status", arguments: {} });
    report.status = { isError: status.isError === true, body: bodyOf(status) };
  }
} catch (err) {
  report.errors.push(String(err));
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
