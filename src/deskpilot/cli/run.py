"""``deskpilot run "goal" --app X``: a person's entry point to a delegated task.

The command is an entry point like MCP: it builds a runtime in this process, calls the same
``start_task`` / ``pause`` / ``resume`` / ``takeover`` / ``stop`` tools an agent would, and
follows the task by reading its timeline from the kernel's store (the store is the record, so
what is shown is exactly what was written). The operator runs inside this process, which is
why a paused task can only be resumed from here and why the run ends when the process does.

Exit codes (also in ``--help`` and docs/cli-run.md)::

    0    completed (its verification passed)
    1    failed (a budget, give_up, repeated verification failure, an unrecoverable error)
    2    usage error (bad options; every command's convention)
    3    canceled from outside this run (a stop elsewhere, the kill switch, shutdown)
    4    could not start (no decision model, no display, no such app, bad criteria …)
    5    --timeout elapsed (the task was stopped)
    6    handoff_required (the task needs the person)
    130  stopped from this run's Ctrl-C prompt (or a second Ctrl-C)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.prompt import Prompt
from rich.spinner import Spinner
from rich.text import Text

from deskpilot.cli.remote_host import host_command_option, pin_host_key_option, remote_kernel
from deskpilot.protocol.session import TERMINAL_STATES, EventType, SessionState
from deskpilot.runtime.diagnostics import DIAGNOSTIC_PREFIX

if TYPE_CHECKING:
    from deskpilot.kernel.kernel import Kernel
    from deskpilot.runtime.call import ToolOutcome
    from deskpilot.runtime.runtime import Runtime
    from deskpilot.store.timeline import TimelineEventRow

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_HANDOFF = 6
EXIT_CANCELED = 3
EXIT_NOT_STARTED = 4
EXIT_TIMEOUT = 5
EXIT_INTERRUPTED = 130

#: the agent session this command's calls run under
AGENT_SESSION = "cli-run"
#: how often the timeline is read (the store is the record; reading is cheap)
POLL_S = 0.15
#: how long to wait for an ended run's cleanup before reading its final fields
SETTLE_S = 10.0
STOP_REASON = "stopped from deskpilot run"
TIMEOUT_REASON = "--timeout elapsed in deskpilot run"

_END_STATES = TERMINAL_STATES | {SessionState.HANDOFF_REQUIRED}
_STATE_EXIT = {
    SessionState.COMPLETED: EXIT_COMPLETED,
    SessionState.FAILED: EXIT_FAILED,
    SessionState.HANDOFF_REQUIRED: EXIT_HANDOFF,
    SessionState.CANCELED: EXIT_CANCELED,
}


@dataclass
class RunRequest:
    """What the person asked for, already checked (the arguments of ``start_task``)."""

    goal: str
    app: str | int | None
    window_id: str | None
    criteria: list[Any] | None
    accept: list[str]
    max_steps: int | None
    timeout_s: float | None

    def arguments(self) -> dict[str, Any]:
        args: dict[str, Any] = {"goal": self.goal}
        if self.app is not None:
            args["app"] = self.app
        if self.window_id is not None:
            args["window_id"] = self.window_id
        if self.criteria is not None:
            args["success_criteria"] = self.criteria
        if self.accept:
            args["acceptance_criteria"] = list(self.accept)
        if self.max_steps is not None:
            args["max_steps"] = self.max_steps
        return args


# ----------------------------------------------------------------------------- tool answers


def answer_json(outcome: ToolOutcome) -> dict[str, Any]:
    """The JSON body of a successful tool answer (the text before its diagnostic line)."""
    body = outcome.text.split("\n\n" + DIAGNOSTIC_PREFIX, 1)[0]
    value = json.loads(body)
    return value if isinstance(value, dict) else {"value": value}


def failure(outcome: ToolOutcome) -> tuple[str, str, dict[str, Any]]:
    """The error's code, words and structured details (a lease holder's pid, the candidate
    apps, the setting to change): the details are what the person acts on."""
    diag = outcome.diagnostic
    details = diag.extra.get("details")
    return (
        diag.code or "internal_error",
        diag.message or "the call failed",
        dict(details) if isinstance(details, dict) else {},
    )


# ----------------------------------------------------------------------------- views


class View(Protocol):
    """How a run is shown: live with rich for a person, or JSON lines for a program."""

    interactive: bool

    def started(self, answer: dict[str, Any]) -> None: ...
    def event(self, row: TimelineEventRow) -> None: ...
    def status(self, status: dict[str, Any]) -> None: ...
    def note(self, text: str) -> None: ...
    def error(self, code: str, message: str, details: dict[str, Any] | None = None) -> None: ...
    def result(self, status: dict[str, Any], exit_code: int) -> None: ...
    def suspend(self) -> None: ...
    def unsuspend(self) -> None: ...
    def close(self) -> None: ...


def _risk(payload: dict[str, Any], remembered: dict[str, Any] | None) -> str:
    risk = payload.get("risk") or (remembered or {}).get("risk")
    return f" {risk}" if risk else ""


def _kind(payload: dict[str, Any], remembered: dict[str, Any] | None) -> str:
    return str(payload.get("kind") or (remembered or {}).get("kind") or "action")


def describe(row: TimelineEventRow, actions: dict[str, dict[str, Any]]) -> Text | None:
    """One line for a person, or None for events too chatty to show (observations). Built
    from the payload's codes, levels and ids only: a timeline never holds typed text."""
    p = row.payload
    seen = actions.get(row.action_id or "")
    kind, risk = _kind(p, seen), _risk(p, seen)
    t = row.type
    if t is EventType.ACTION_REQUESTED:
        actions[row.action_id or ""] = {"kind": p.get("kind"), "risk": p.get("risk")}
        return Text(f"  · {kind}{risk} requested ({p.get('decision', '?')})", style="dim")
    if t is EventType.ACTION_EXECUTED:
        how = f" via {p['method']}" if p.get("method") else ""
        return Text(f"  ✓ {kind}{risk} executed{how}", style="green")
    if t is EventType.ACTION_FAILED:
        return Text(f"  ✗ {kind}{risk} failed: {p.get('code', '?')}", style="yellow")
    if t is EventType.ACTION_BLOCKED:
        return Text(f"  ⛔ {kind}{risk} blocked: {p.get('reason', '?')}", style="red")
    if t is EventType.APPROVAL_REQUESTED:
        return Text(
            f"  ⏸ waits for your confirmation: {p.get('summary', kind)} — run "
            f"`deskpilot confirm approve {p.get('confirmationId')}` (or `deskpilot confirm "
            f"deny {p.get('confirmationId')}`) in another terminal",
            style="bold magenta",
        )
    if t is EventType.APPROVAL_RESOLVED:
        return Text(f"  confirmation {p.get('confirmationId')}: {p.get('outcome')}", style="dim")
    if t is EventType.VERIFICATION_COMPLETED:
        return _verification_line(p)
    return _state_line(row)


def _verification_line(p: dict[str, Any]) -> Text:
    passed = p.get("passed")
    verdict = (
        ("undecidable", "yellow")
        if passed is None
        else ("passed", "bold green")
        if passed
        else ("failed", "bold red")
    )
    return Text(
        f"  verification {p.get('verificationId')} ({p.get('kind')}): {verdict[0]} "
        f"[{p.get('reason')}]",
        style=verdict[1],
    )


def _state_line(row: TimelineEventRow) -> Text | None:
    p = row.payload
    reason = p.get("reason")
    why = f": {reason}" if reason else ""
    lines = {
        EventType.SESSION_STARTED: ("task started", "bold"),
        EventType.SESSION_PAUSED: ("task paused", "yellow"),
        EventType.SESSION_RESUMED: ("task resumed", "cyan"),
        EventType.TARGET_BOUND: ("target bound", "dim"),
        EventType.HANDOFF_REQUIRED: (f"handoff required{why}", "bold yellow"),
        EventType.SESSION_COMPLETED: (f"task completed{why}", "bold green"),
        EventType.SESSION_FAILED: (f"task failed{why}", "bold red"),
        EventType.SESSION_CANCELED: (f"task canceled{why}", "bold red"),
    }
    line = lines.get(row.type)
    return None if line is None else Text(line[0], style=line[1])


def status_line(status: dict[str, Any]) -> str:
    """One short line (it must fit a narrow terminal, or the live view scrolls)."""
    left = status.get("budgetLeft") or {}
    state, phase = status.get("state"), status.get("phase")
    doing = state if phase in (None, state) else f"{state} ({phase})"
    return (
        f"{doing} · step {status.get('steps', 0)} · left {left.get('steps', '?')} steps "
        f"{int(left.get('runtimeMs', 0) / 1000)} s · {status.get('elapsedMs', 0) / 1000:.0f} s"
        " · Ctrl-C pauses"
    )


@dataclass
class RichView:
    """The live view: events scroll above a spinner line with the task's status."""

    console: Console = field(default_factory=lambda: Console(highlight=False))
    errors: Console = field(default_factory=lambda: Console(stderr=True, highlight=False))
    interactive: bool = True

    def __post_init__(self) -> None:
        self._spinner = Spinner("dots", text="starting …")
        self._live = Live(self._spinner, console=self.console, transient=True)
        self._actions: dict[str, dict[str, Any]] = {}
        self._live.start()

    def started(self, answer: dict[str, Any]) -> None:
        target = answer.get("target") or {}
        self.console.print(
            Text(
                f"task {answer.get('taskId')} on {target.get('app')} "
                f"({target.get('windowId')}); criteria from {answer.get('criteriaSource')}",
                style="bold",
            )
        )

    def event(self, row: TimelineEventRow) -> None:
        line = describe(row, self._actions)
        if line is not None:
            self.console.print(line)

    def status(self, status: dict[str, Any]) -> None:
        self._spinner.update(text=status_line(status))

    def note(self, text: str) -> None:
        self.console.print(Text(text, style="cyan"))

    def error(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        self._live.stop()
        self.errors.print(Text(f"error: {code}: {message}", style="bold red"))
        if details:
            shown = json.dumps(details, ensure_ascii=False, separators=(", ", ": "))
            self.errors.print(Text(f"  details: {shown}", style="red"))

    def result(self, status: dict[str, Any], exit_code: int) -> None:
        self._live.stop()
        style = "bold green" if exit_code == EXIT_COMPLETED else "bold red"
        self.console.print(
            Text(
                f"{status.get('state')} ({status.get('endReason', '-')}) after "
                f"{status.get('steps', 0)} steps, {status.get('modelCalls', 0)} model calls, "
                f"{status.get('elapsedMs', 0) / 1000:.1f} s — exit {exit_code}",
                style=style,
            )
        )
        for vid in status.get("verificationIds") or []:
            self.console.print(f"  see `deskpilot verification show {vid}`")
        if status.get("endMessage"):
            self.console.print(Text(f"  {status['endMessage']}"))

    def suspend(self) -> None:
        self._live.stop()

    def unsuspend(self) -> None:
        self._live.start()

    def close(self) -> None:
        self._live.stop()


@dataclass
class JsonView:
    """One JSON object per line on stdout: ``started``, ``event`` …, then ``result``."""

    interactive: bool = False

    @staticmethod
    def _emit(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()

    def started(self, answer: dict[str, Any]) -> None:
        self._emit({"type": "started", **answer})

    def event(self, row: TimelineEventRow) -> None:
        self._emit(
            {
                "type": "event",
                "event": row.type.value,
                "seq": row.seq,
                "taskId": row.session_id,
                "actionId": row.action_id,
                "at": row.created_at,
                "payload": row.payload,
            }
        )

    def status(self, status: dict[str, Any]) -> None:
        pass  # the events carry the story; the final line carries the status

    def note(self, text: str) -> None:
        self._emit({"type": "note", "text": text})

    def error(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        self._emit({"type": "error", "code": code, "message": message, "details": details or {}})

    def result(self, status: dict[str, Any], exit_code: int) -> None:
        self._emit({"type": "result", "exitCode": exit_code, **status})

    def suspend(self) -> None:
        pass

    def unsuspend(self) -> None:
        pass

    def close(self) -> None:
        pass


# ----------------------------------------------------------------------------- asking


class Asker:
    """Prompts on a daemon thread, so the event loop (the host's heartbeat, the kernel's
    waits) keeps running while the person thinks, and a second Ctrl-C can answer "stop"
    without waiting for a line the person may never type."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._pending: asyncio.Future[str] | None = None

    async def ask(self, question: str, choices: list[str], default: str) -> str:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[str] = loop.create_future()
        self._pending = fut

        def prompt() -> None:
            try:
                answer = Prompt.ask(
                    escape(question), choices=choices, default=default, console=self.console
                )
            except (EOFError, KeyboardInterrupt):
                answer = "s"
            loop.call_soon_threadsafe(_settle_future, fut, answer)

        threading.Thread(target=prompt, name="deskpilot-run-prompt", daemon=True).start()
        try:
            return await fut
        finally:
            self._pending = None

    def interrupt(self) -> bool:
        """A Ctrl-C while asking means stop; True when a question was open."""
        if self._pending is None or self._pending.done():
            return False
        self._pending.set_result("s")
        return True


def _settle_future(fut: asyncio.Future[str], value: str) -> None:
    if not fut.done():
        fut.set_result(value)


# ----------------------------------------------------------------------------- following


class Follower:
    """Follows one task to its end: prints its timeline, handles Ctrl-C and --timeout, and
    says which exit code its outcome means."""

    def __init__(self, runtime: Runtime, task_id: str, view: View, timeout_s: float | None):
        self.runtime = runtime
        self.task_id = task_id
        self.view = view
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.after_seq = 0
        self.interrupted = asyncio.Event()
        self.asker = Asker(view.console) if isinstance(view, RichView) else None

    # -- reading the record
    def drain(self) -> None:
        for row in self.runtime.ctx.kernel.timeline(self.task_id, self.after_seq):
            self.after_seq = row.seq
            self.view.event(row)

    def state(self) -> SessionState | None:
        return self.runtime.ctx.kernel.session_state(self.task_id)

    def status(self) -> dict[str, Any]:
        from deskpilot.runtime.delegated.task_tools import status_of

        task = self.runtime.ctx.tasks.get(self.task_id)
        return {} if task is None else status_of(self.runtime.ctx, task)

    async def settle(self) -> None:
        """Wait for the run's cleanup so the status read next is final."""
        task = self.runtime.ctx.tasks.get(self.task_id)
        if task is not None and task.runner is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(task.settled.wait(), SETTLE_S)

    # -- signals
    def on_sigint(self) -> None:
        if self.asker is not None and self.asker.interrupt():
            return
        self.interrupted.set()

    # -- the loop
    async def follow(self) -> int:
        while True:
            self.drain()
            state = self.state()
            if state is None or state in _END_STATES:
                return await self.ended(state)
            self.view.status(self.status())
            if self.interrupted.is_set():
                self.interrupted.clear()
                code = await self.interrupt()
                if code is not None:
                    return code
                continue
            if self.deadline is not None and time.monotonic() >= self.deadline:
                return await self.stop(TIMEOUT_REASON, EXIT_TIMEOUT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.interrupted.wait(), POLL_S)

    async def ended(self, state: SessionState | None) -> int:
        await self.settle()
        self.drain()
        final = self.state() or state
        return EXIT_FAILED if final is None else _STATE_EXIT.get(final, EXIT_FAILED)

    async def call(self, tool: str, args: dict[str, Any]) -> bool:
        outcome = await self.runtime.call(tool, args, agent_session=AGENT_SESSION)
        if outcome.is_error:
            code, message, _ = failure(outcome)
            self.view.note(f"{tool} did not go through: {code}: {message}")
            return False
        return True

    async def stop(self, reason: str, code: int) -> int:
        await self.call("stop", {"task_id": self.task_id, "reason": reason})
        await self.settle()
        self.drain()
        if self.state() != SessionState.CANCELED:  # it ended on its own meanwhile
            return await self.ended(self.state())
        return code

    async def interrupt(self) -> int | None:
        """Ctrl-C: pause, then ask. None means keep following; else the exit code."""
        if self.asker is None:  # --json: nobody to ask; a Ctrl-C stops the task
            return await self.stop(STOP_REASON, EXIT_INTERRUPTED)
        if self.state() not in (SessionState.PAUSED, *_END_STATES):
            await self.call("pause", {"task_id": self.task_id})
        self.drain()
        if self.state() in _END_STATES:
            return None  # it ended before the pause landed: the loop reports the end
        self.view.status(self.status())
        self.view.suspend()
        code = await self.choose()
        if code is None:
            self.view.unsuspend()
        return code

    async def choose(self) -> int | None:
        """Ask until the person resumes (None) or stops (the exit code). A take over keeps
        the task paused while the person drives; afterwards only resume or stop remain."""
        assert self.asker is not None
        taken = False
        while True:
            if taken:
                question, choices = "Hand the desktop back: [r]esume the task, or [s]top it?", "rs"
            else:
                question, choices = "Task paused. [r]esume, [t]ake over, or [s]top?", "rts"
            answer = await self.asker.ask(question, list(choices), "r")
            if answer == "r" and await self.call("resume", {"task_id": self.task_id}):
                return None
            if answer == "t" and await self.call("takeover", {"task_id": self.task_id}):
                taken = True
                answer = await self.asker.ask(
                    "You have the desktop; the task waits. [d]one, or [s]top the task?",
                    ["d", "s"],
                    "d",
                )
            if answer == "s":
                return await self.stop(STOP_REASON, EXIT_INTERRUPTED)


# ----------------------------------------------------------------------------- the command


async def _start(runtime: Runtime, request: RunRequest, view: View) -> str | None:
    outcome = await runtime.call("start_task", request.arguments(), agent_session=AGENT_SESSION)
    if outcome.is_error:
        view.error(*failure(outcome))
        return None
    answer = answer_json(outcome)
    view.started(answer)
    return str(answer["taskId"])


async def _follow(runtime: Runtime, task_id: str, request: RunRequest, view: View) -> int:
    follower = Follower(runtime, task_id, view, request.timeout_s)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, follower.on_sigint)
    try:
        code = await follower.follow()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    view.result(follower.status(), code)
    return code


async def run_task(request: RunRequest, view: View, kernel: Kernel | None = None) -> int:
    """Start, follow, and close the runtime whatever happened (the close stops a task that is
    still live: the operator lives in this process and cannot outlive it). ``kernel``: one
    whose host is on another machine (``--host-command``); None: this desktop's."""
    from deskpilot.runtime.wiring import build_runtime

    runtime = build_runtime(None, kernel)
    try:
        await runtime.start()
        task_id = await _start(runtime, request, view)
        if task_id is None:
            return EXIT_NOT_STARTED
        return await _follow(runtime, task_id, request, view)
    finally:
        view.close()
        await runtime.close()


def load_criteria(path: Path) -> list[Any]:
    """A JSON list of verification specs, or an object holding one as ``success_criteria``
    (``successCriteria``); the specs themselves are checked by start_task."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror}"
        raise typer.BadParameter(msg, param_hint="--criteria") from None
    except UnicodeDecodeError:
        msg = f"{path} is not UTF-8 text (save it as UTF-8 JSON)"
        raise typer.BadParameter(msg, param_hint="--criteria") from None
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"{path} is not JSON: {exc}", param_hint="--criteria") from None
    if isinstance(data, dict):
        data = data.get("success_criteria", data.get("successCriteria"))
    if not isinstance(data, list) or not data:
        raise typer.BadParameter(
            "the file must hold a non-empty JSON list of verification specs, or "
            '{"success_criteria": [...]}',
            param_hint="--criteria",
        )
    return data


def _app_ref(app: str | None) -> str | int | None:
    return int(app) if app is not None and app.isdigit() else app


def run(
    goal: str = typer.Argument(..., help="What the task should achieve, in plain words."),
    app: str | None = typer.Option(
        None, "--app", help="The target app: name, executable, WM_CLASS, desktop id or pid."
    ),
    window_id: str | None = typer.Option(
        None, "--window-id", help="The target window, e.g. 0x1c00003 (instead of --app)."
    ),
    criteria: Path | None = typer.Option(
        None, "--criteria", help="JSON file: a list of verification specs (success criteria)."
    ),
    accept: list[str] = typer.Option(
        [], "--accept", help="An acceptance sentence (repeatable); used when no --criteria."
    ),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1, help="Fewer steps."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON lines instead of the view."),
    timeout: float | None = typer.Option(
        None, "--timeout", min=0.1, help="Stop the task after this many seconds."
    ),
    host_command: str | None = host_command_option(),
    pin_host_key: bool = pin_host_key_option(),
) -> None:
    """Run a delegated task on this desktop (or, with --host-command, on another machine's,
    over ssh) and show it live. Ctrl-C pauses it and asks:
    resume, take over, or stop (with --json a Ctrl-C stops it).

    Exit codes: 0 completed, 1 failed, 2 usage error,
    3 canceled from outside this run (a stop elsewhere, the kill switch),
    4 could not start (e.g. no decision model: see `deskpilot provider configure`),
    5 --timeout elapsed (the task was stopped), 6 handoff_required,
    130 stopped from the Ctrl-C prompt.
    """
    if (app is None) == (window_id is None):
        raise typer.BadParameter("give exactly one of --app or --window-id", param_hint="--app")
    request = RunRequest(
        goal=goal,
        app=_app_ref(app),
        window_id=window_id,
        criteria=None if criteria is None else load_criteria(criteria),
        accept=list(accept),
        max_steps=max_steps,
        timeout_s=timeout,
    )
    kernel = remote_kernel(host_command, pin_host_key)
    view: View = JsonView() if as_json else RichView()
    raise typer.Exit(asyncio.run(run_task(request, view, kernel)))
