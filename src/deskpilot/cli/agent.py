"""``deskpilot agent ["goal"]``: deskpilot's own agent loop on the configured text-only model.

With a goal it runs that one user task and exits; without one it is an interactive session:
each line is a new user task (its own stateIds, its own bounded budget), ``继续`` / "continue"
carries the previous intent (the provider's continuation rules), ``/plan`` toggles plan mode,
``/exit`` (or end of input) ends. The runtime runs in this process — the same runtime the MCP
server uses — so the agent's desktop calls need no MCP round trip (runtime/agent_desktop.py).

Exit codes (docs/cli-agent.md)::

    0    the task was answered (or planned, in plan mode); interactive: /exit or end of input
    1    the task failed (a provider error, the reply limit)
    2    usage error
    4    could not start (no decision model configured, no usable working directory)
    5    the bounded budget ran out before an answer
    130  interrupted with Ctrl-C
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from deskpilot.protocol.errors import DeskpilotError

if TYPE_CHECKING:
    from deskpilot.agent.loop import Agent, TurnReport

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_STARTED = 4
EXIT_BUDGET = 5
EXIT_INTERRUPTED = 130
PROMPT = "› "

_STATUS_EXIT = {
    "answered": EXIT_OK,
    "planned": EXIT_OK,
    "failed": EXIT_FAILED,
    "budget_exhausted": EXIT_BUDGET,
    "interrupted": EXIT_INTERRUPTED,
}


class _View:
    """The sink plus what the command needs of the view (closing it, reading a line)."""

    def __init__(self, json_out: bool) -> None:
        from deskpilot.cli.agent_view import JsonLines, RichAgentView

        self.sink: JsonLines | RichAgentView = JsonLines() if json_out else RichAgentView()
        self.json = json_out

    def read_line(self) -> str | None:
        if not self.json and sys.stdin.isatty():
            from deskpilot.cli.agent_view import RichAgentView

            assert isinstance(self.sink, RichAgentView)
            try:
                return self.sink.console.input(PROMPT)
            except EOFError:
                return None
        line = sys.stdin.readline()
        return None if line == "" else line.rstrip("\n")

    def say(self, code: str, message: str) -> None:
        from deskpilot.agent.events import AgentEvent

        self.sink(AgentEvent("error", {"code": code, "message": message}))

    def note(self, code: str, text: str) -> None:
        from deskpilot.agent.events import AgentEvent

        self.sink(AgentEvent("notice", {"code": code, "text": text}))


async def _turn(agent: Agent, text: str) -> TurnReport:
    """One user task; Ctrl-C interrupts it (what already ran is not undone)."""
    from deskpilot.agent.loop import TurnReport

    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(agent.run_turn(text))
    loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        return TurnReport("interrupted", "interrupted", code="interrupted")
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def _next_line(view: _View) -> str | None:
    """The next line, read on a daemon thread (the event loop — the host's heartbeat, the
    kernel's waits — keeps running; a Ctrl-C at the prompt ends the session at once instead of
    waiting for a line that may never come)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[str | None] = loop.create_future()

    def settle(value: str | None) -> None:
        if not fut.done():
            fut.set_result(value)

    def read() -> None:
        try:
            value = view.read_line()
        except (EOFError, KeyboardInterrupt, OSError):
            value = None
        loop.call_soon_threadsafe(settle, value)

    threading.Thread(target=read, name="deskpilot-agent-input", daemon=True).start()
    loop.add_signal_handler(signal.SIGINT, settle, None)
    try:
        return await fut
    finally:
        loop.remove_signal_handler(signal.SIGINT)


HELP = (
    "Each line is a new task for the agent. `继续` / `continue` carries on the previous one. "
    "/plan toggles plan mode (the agent only looks, then answers with a plan); /exit ends "
    "(so does end of input); Ctrl-C interrupts the running task."
)


async def _interactive(agent: Agent, view: _View) -> int:
    """Until /exit or end of input (exit 0 then: the session ended as asked)."""
    while True:
        line = await _next_line(view)
        if line is None:
            return EXIT_OK
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return EXIT_OK
        if text == "/plan":
            agent.toggle_plan()
            continue
        if text in ("/help", "/?"):
            view.note("help", HELP)
            continue
        if text.startswith("/") and " " not in text and len(text) > 1:
            view.note("unknown_command", f"{text} is not a command ({HELP})")
            continue
        await _turn(agent, text)


async def run_agent(
    goal: str | None,
    *,
    json_out: bool,
    bounded: bool,
    plan: bool,
    cwd: Path,
    tools: list[str] | None = None,
    max_tools: int | None = None,
) -> int:
    from deskpilot.agent.factory import build_agent
    from deskpilot.runtime.agent_desktop import RuntimeDesktop
    from deskpilot.runtime.budget import BudgetMode
    from deskpilot.runtime.runtime import RuntimeConfig
    from deskpilot.runtime.wiring import build_runtime

    view = _View(json_out)
    mode = BudgetMode.BOUNDED if bounded else BudgetMode.UNBOUNDED
    runtime = build_runtime(RuntimeConfig(budget_mode=mode))
    agent: Agent | None = None
    try:
        try:
            agent = build_agent(
                RuntimeDesktop(runtime),
                cwd=cwd,
                sink=view.sink,
                env=os.environ,
                bounded=bounded,
                tools=tools,
                max_tools=max_tools,
            )
        except DeskpilotError as exc:
            view.say(exc.code.value, exc.message)
            return EXIT_USAGE if exc.code.value == "invalid_request" else EXIT_NOT_STARTED
        await runtime.start()
        if plan:
            agent.toggle_plan()
        if goal is not None:
            report = await _turn(agent, goal)
            return _STATUS_EXIT.get(report.status, EXIT_FAILED)
        return await _interactive(agent, view)
    finally:
        view.sink.close()
        if agent is not None:
            await agent.model.aclose()
        await runtime.close()


def _tool_list(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if names == ["none"]:
        return []
    if not names or "none" in names:
        raise typer.BadParameter(
            "a comma-separated list of tool names, or none", param_hint="--tools"
        )
    return list(dict.fromkeys(names))


def agent(
    goal: Annotated[
        str | None, typer.Argument(help="The task; leave it out for an interactive session.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Write the event stream as JSON lines.")
    ] = False,
    budget: Annotated[
        str,
        typer.Option(
            help="bounded (180 s and 30 action attempts per user task) or unbounded.",
        ),
    ] = "bounded",
    plan: Annotated[bool, typer.Option("--plan", help="Start in plan mode.")] = False,
    cwd: Annotated[
        Path | None, typer.Option(help="Working directory for read and bash (default: here).")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help="Only these tools may be offered, comma-separated (e.g. read,bash); "
            "'none' offers none. Default: all of them.",
        ),
    ] = None,
    max_tools: Annotated[
        int | None,
        typer.Option(help="Tools shown per model request (default 14; the core is pinned)."),
    ] = None,
) -> None:
    """Run deskpilot's own agent on the configured text-only model (`deskpilot provider
    configure` sets it up)."""
    if budget not in ("bounded", "unbounded"):
        raise typer.BadParameter("--budget is bounded or unbounded", param_hint="--budget")
    where = (cwd or Path.cwd()).resolve()
    if not where.is_dir():
        message = f"--cwd {where} is not a directory"
        if json_out:
            _View(json_out=True).say("invalid_request", message)
        typer.echo(f"error: {message}", err=True)
        raise typer.Exit(EXIT_NOT_STARTED)
    code = asyncio.run(
        run_agent(
            goal,
            json_out=json_out,
            bounded=budget == "bounded",
            plan=plan,
            cwd=where,
            tools=_tool_list(tools),
            max_tools=max_tools,
        )
    )
    raise typer.Exit(code)
