"""The runtime as deskpilot's own agent sees it: the desktop tools, in-process.

``deskpilot agent`` runs the agent loop (deskpilot.agent, a layer below this one) in the same
process as a ``Runtime``; this adapter is the ``DesktopTools`` the loop is given. A call is
``Runtime.call`` — the very path the MCP server translates to — so observation, actions,
controls and ``start_task`` pass the same kernel, policy, ledger, budget and diagnostics, with
no MCP round trip. What comes back is turned into the loop's ``ToolResult`` by value: the text
the model sees (tree and diagnostic), the state's id and header, and the model frame, which
``vision_read`` can read by state id.

The model is shown every tool but ``screenshot``: its only content is an image, which a
text-only model cannot see (``vision_read`` is its bridge). Action schemas leave out
``expect`` — a delegated operator's verification hook, not something to type by hand — so the
prompt stays small; the runtime still validates every call against its full model.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from deskpilot.agent.tools import ModelFrame, ToolResult
from deskpilot.kernel.port import KernelPort
from deskpilot.provider import ToolSpec as ModelTool
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.budget import TaskBudget
from deskpilot.runtime.call import ToolOutcome
from deskpilot.runtime.preflight import check_may_act_in
from deskpilot.runtime.runtime import Runtime
from deskpilot.runtime.tools import TOOLS

#: the agent session deskpilot's own agent runs under (one per process)
AGENT_SESSION = "deskpilot-agent"
#: tools a text-only model gains nothing from
HIDDEN = frozenset({"screenshot"})
#: shown in every request: finding a window, observing it and the common actions; the other
#: tools (drag, paste, controls, start_task, diagnostics …) are offered when the user's words
#: rank them (the provider's selection), which keeps each prompt small
CORE = frozenset(
    {"list_apps", "get_app_state", "click", "type_text", "set_value", "press_key", "invoke_element"}
)
#: the order the other tools are offered in when the user's words rank none of them (the
#: provider's selection keeps the list order among equals): the likeliest next needs first
NEXT = (
    "open_app",
    "scroll",
    "list_windows",
    "get_screen_state",
    "paste",
    "select_text",
    "drag",
    "perform_secondary_action",
    "start_task",
    "get_status",
    "wait_for_completion",
)
#: fields of the runtime's argument models the agent's model is not shown
NOT_SHOWN = frozenset({"expect"})


class RuntimeDesktop:
    def __init__(self, runtime: Runtime, *, agent_session: str = AGENT_SESSION) -> None:
        self.runtime = runtime
        self.agent_session = agent_session
        self.kernel: KernelPort = runtime.ctx.kernel
        order = [*sorted(CORE), *NEXT, *(n for n in TOOLS if n not in CORE and n not in NEXT)]
        self._specs = [
            ModelTool(name, TOOLS[name].description, ta.schema_without(TOOLS[name].args, NOT_SHOWN))
            for name in order
            if name not in HIDDEN
        ]

    def specs(self) -> list[ModelTool]:
        return list(self._specs)

    def core(self) -> frozenset[str]:
        return CORE

    def kind_of(self, name: str) -> str | None:
        spec = TOOLS.get(name)
        return None if spec is None or name in HIDDEN else spec.kind

    async def call(self, name: str, arguments: Mapping[str, Any], *, turn_id: str) -> ToolResult:
        outcome = await self.runtime.call(
            name, dict(arguments), agent_session=self.agent_session, turn_id=turn_id
        )
        return to_result(name, outcome)

    def budget(self, turn_id: str) -> TaskBudget:
        return self.runtime.turns.current(self.agent_session, turn_id).budget

    @contextlib.asynccontextmanager
    async def kernel_session(self, turn_id: str) -> AsyncIterator[str]:
        turn = self.runtime.turns.current(self.agent_session, turn_id)
        check_may_act_in(self.runtime.ctx, self.agent_session, turn)
        async with self.runtime.ctx.sessions.using(self.agent_session) as sess:
            yield sess.session_id

    def current_session(self) -> str | None:
        sess = self.runtime.ctx.sessions.get(self.agent_session)
        return None if sess is None else sess.session_id

    def end_turn(self, turn_id: str) -> None:
        self.runtime.turns.leave(self.agent_session)


def state_header(text: str) -> str | None:
    """The header lines of a state in a result text (App= … elements=)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("App=(")), None)
    if start is None:
        return None
    out: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            break
        out.append(line)
    return "\n".join(out)


def to_result(name: str, outcome: ToolOutcome) -> ToolResult:
    diag = outcome.diagnostic
    risks = [s.risk for s in diag.steps if s.risk]
    frame = None
    if outcome.image is not None and outcome.state_id is not None:
        image = outcome.image
        frame = ModelFrame(image.jpeg, image.width, image.height)
    details = diag.extra.get("details")
    return ToolResult(
        outcome.text,
        is_error=outcome.is_error,
        code=diag.code,
        kind=TOOLS[name].kind if name in TOOLS else "act",
        risk=max(risks) if risks else None,
        state_id=outcome.state_id,
        state_header=state_header(outcome.text) if outcome.state_id else None,
        frame=frame,
        elapsed_ms=diag.timings.tool_elapsed_ms,
        details=dict(details) if isinstance(details, dict) else {},
    )
