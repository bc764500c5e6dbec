// The official TypeScript MCP SDK looks at an app that stops answering, the way an agent
// would meet a hung app: get_app_state while it runs, then it is stopped (SIGSTOP, what a
// debugger or a hung main loop does) and looked at three times; an element of that stale
// state is clicked, an element of the state from before the stop is clicked, and a key is
// pressed; it runs again, is looked at once more, and the state from before the stop is
// acted on again (a refusal that sent nothing does not spend it).
//
// Run by tests/mcp/test_frozen_app.py:  node ts_frozen.mjs '<config JSON>' <pid>
//   {"transport": "stdio", "command": ".../deskpilot", "args": ["serve"], "env": {...}}
// Prints one JSON line with each call's time and what its text said; the test asserts on
// it. The app is sent SIGCONT on the way out, whatever happened.

import { connectStdio, diagnosticOf, textOf } from "./sdk_kit.mjs";

const config = JSON.parse(process.argv[2]);
const pid = Number(process.argv[3]);

// the id at the end of the first tree line that has one, e.g. `- textField [3]`
function firstElementId(text) {
  const m = text.match(/^\s*- .*\[(\d+)\]\s*$/m);
  return m ? Number(m[1]) : null;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const client = await connectStdio(config, "deskpilot-ts-frozen");

async function call(name, args) {
  const t0 = performance.now();
  const result = await client.callTool({ name, arguments: args });
  const text = textOf(result);
  return {
    tool: name,
    ms: performance.now() - t0,
    isError: result.isError === true,
    stateId: text.match(/^state_id=(\S+)$/m)?.[1] ?? null,
    diagnostic: diagnosticOf(text),
    stale: text.match(/^stale=age (\d+) ms/m)?.[1] ?? null,
    unavailable: /^tree=unavailable/m.test(text),
    elementId: firstElementId(text),
    treeVersion: text.match(/treeVersion=(\S+)/)?.[1] ?? null,
    text: text.slice(0, 3000),
  };
}

const report = {
  fresh: null,
  looks: [],
  click: null,
  clickFresh: null,
  key: null,
  back: null,
  clickFreshAfter: null,
};
try {
  report.fresh = await call("get_app_state", { app: pid });
  process.kill(pid, "SIGSTOP");
  try {
    await sleep(300);
    for (let i = 0; i < 3; i++) report.looks.push(await call("get_app_state", { app: pid }));
    const last = report.looks.at(-1);
    if (last.stateId && last.elementId !== null) {
      report.click = await call("click", { state_id: last.stateId, element_id: last.elementId });
    }
    const fresh = report.fresh;
    if (fresh.stateId && fresh.elementId !== null) {
      report.clickFresh = await call("click", {
        state_id: fresh.stateId,
        element_id: fresh.elementId,
      });
    }
    const latest = report.looks.at(-1);
    if (latest.stateId) {
      report.key = await call("press_key", { state_id: latest.stateId, keys: ["x"] });
    }
  } finally {
    process.kill(pid, "SIGCONT");
  }
  await sleep(500);
  report.back = await call("get_app_state", { app: pid });
  if (report.fresh.stateId && report.fresh.elementId !== null) {
    report.clickFreshAfter = await call("click", {
      state_id: report.fresh.stateId,
      element_id: report.fresh.elementId,
    });
  }
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
