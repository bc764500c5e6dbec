"""The starter suite's reference solver: an MCP agent command that solves each task by script.

``deskpilot eval suites/starter.json --agent mcp:"python tests/eval/reference_solver.py"`` runs
it once per task; it reads the server's address and the task id from the variables the eval
sets (docs/eval.md) and drives deskpilot's tools over Streamable HTTP like any agent would:
it reads the window state and finds each element by its tree line (role and name), never by
a remembered id. One plan per task id; every plan ends in the state its criteria describe.

``--noop``: connect, look once, and do nothing (the criteria must then fail).
``--dump``: print the target's state (for writing a plan).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client

#: element lines as the tree renders them: ``  - role "name" = "value" [states] [id]``
_LINE = re.compile(
    r'^\s*- (\w+)(?: "((?:[^"\\]|\\.)*)")?(?: = "((?:[^"\\]|\\.)*)")?(.*?)\[(\d+)\]\s*$'
)


class Failed(RuntimeError):
    pass


def _unq(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        value = json.loads(f'"{text}"')
    except ValueError:
        return text
    return value if isinstance(value, str) else text


class State:
    def __init__(self, text: str) -> None:
        self.text = text
        m = re.search(r"^state_id=(\S+)$", text, re.M)
        self.state_id = m.group(1) if m else None
        self.lines: list[tuple[str, str | None, str | None, str, int]] = []
        for line in text.splitlines():
            if (lm := _LINE.match(line)) is not None:
                self.lines.append(
                    (
                        lm.group(1),
                        _unq(lm.group(2)),
                        _unq(lm.group(3)),
                        lm.group(4),
                        int(lm.group(5)),
                    )
                )

    def find(
        self,
        role: str | None = None,
        name: str | None = None,
        *,
        contains: str | None = None,
        nth: int = 0,
        not_states: tuple[str, ...] = (),
    ) -> int:
        found = [
            eid
            for r, n, _v, states, eid in self.lines
            if (role is None or r == role)
            and (name is None or n == name)
            and (contains is None or (n is not None and contains.lower() in n.lower()))
            and not any(f"[{s}]" in states for s in not_states)
        ]
        if len(found) <= nth:
            raise Failed(f"no element role={role} name={name} contains={contains}\n{self.text}")
        return found[nth]


class Agent:
    def __init__(self, client: Client, target: str) -> None:
        self.client = client
        self.target = target
        self.state: State | None = None

    async def call(self, tool: str, **args: Any) -> State:
        result = await self.client.call_tool(tool, args)
        text = "\n".join(c.text for c in result.content if c.type == "text")
        if result.is_error:
            raise Failed(f"{tool} {args}: {text}")
        state = State(text)
        if state.state_id is not None:
            self.state = state
        return state

    async def look(self, app: str | None = None) -> State:
        return await self.call("get_app_state", app=app or self.target)

    def current(self) -> State:
        assert self.state is not None
        return self.state

    async def act(self, tool: str, **args: Any) -> State:
        """An action on the current state; when its result carries no next state, look."""
        st = self.state or await self.look()
        assert st.state_id is not None
        self.state = None
        await self.call(tool, state_id=st.state_id, **args)
        if self.state is None:  # no state came back: look again, unless the window is gone
            await asyncio.sleep(0.3)
            try:
                await self.look()
            except Failed:
                self.state = None
        return self.state or st

    async def set_field(self, role: str, name: str | None, value: str, nth: int = 0) -> None:
        eid = self.current().find(role, name, nth=nth)
        await self.act("set_value", element_id=eid, value=value)

    async def click(self, role: str | None = None, name: str | None = None, **kw: Any) -> None:
        st = self.state or await self.look()
        await self.act("click", element_id=st.find(role, name, **kw))

    async def keys(self, *keys: str) -> None:
        await self.act("press_key", keys=list(keys))

    async def type(self, text: str, role: str | None = None, name: str | None = None) -> None:
        st = self.state or await self.look()
        args: dict[str, Any] = {"text": text}
        if role is not None or name is not None:
            args["element_id"] = st.find(role, name)
        await self.act("type_text", **args)


Plan = Callable[[Agent], Awaitable[None]]
PLANS: dict[str, Plan] = {}


def plan(task_id: str) -> Callable[[Plan], Plan]:
    def register(fn: Plan) -> Plan:
        PLANS[task_id] = fn
        return fn

    return register


# ----------------------------------------------------------------------------- plans

from reference_plans import register_all  # noqa: E402

register_all(plan)


async def main(mode: str) -> int:
    url = os.environ["DESKPILOT_EVAL_MCP_URL"]
    token = os.environ["DESKPILOT_EVAL_MCP_TOKEN"]
    task_id = os.environ["DESKPILOT_EVAL_TASK_ID"]
    target = os.environ.get("DESKPILOT_EVAL_TARGET") or ""
    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        agent = Agent(client, target)
        if mode == "--dump":
            print((await agent.look()).text)
            return 0
        if mode == "--noop":
            await agent.look()
            return 0
        fn = PLANS.get(task_id)
        if fn is None:
            print(f"no reference plan for {task_id}", file=sys.stderr)
            return 3
        await agent.look()
        await fn(agent)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "")))
