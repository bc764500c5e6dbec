"""How ``deskpilot agent`` shows a task: live with rich for a person, JSON lines for a program.

Both views are sinks of the same ``AgentEvent`` stream (agent/events.py), so ``--json`` is
exactly what the person sees, as data. The rich view prints the model's text, each tool call
with its short argument summary (typed text shows only as a length), its outcome and risk,
the header of a new state, recoveries and notices, and keeps a spinner while the model thinks.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.status import Status
from rich.text import Text

from deskpilot.agent.events import AgentEvent


class JsonLines:
    """One JSON object per event on stdout (flushed: a reader sees each as it happens)."""

    interactive = False

    def __call__(self, event: AgentEvent) -> None:
        sys.stdout.write(json.dumps(event.to_json(), ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()

    def close(self) -> None:
        pass


NOTICES = {
    "plan_fallback": "the model gave no plan in the expected form: a local outline is shown",
    "premature_final_unrepaired": "the model's answer may be premature (no repairs left)",
}
_PLAN_TAGS = re.compile(r"</?proposed_plan>", re.IGNORECASE)


def _plural(count: Any, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _risk(risk: Any) -> str:
    return f" {risk}" if risk else ""


@dataclass
class RichAgentView:
    console: Console = field(default_factory=lambda: Console(highlight=False))
    interactive: bool = True

    def __post_init__(self) -> None:
        self._status: Status | None = None
        self._calls: dict[str, str] = {}

    def _spin(self, text: str | None) -> None:
        if text is None:
            if self._status is not None:
                self._status.stop()
                self._status = None
            return
        if self._status is None:
            self._status = self.console.status(text, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

    def __call__(self, event: AgentEvent) -> None:
        b = event.body
        kind = event.kind
        if kind == "thinking":
            self._spin("the model is thinking …")
            return
        self._spin(None)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(b)

    def _on_session_start(self, b: dict[str, Any]) -> None:
        self.console.print(
            Text(
                f"deskpilot agent · model {b.get('model')} ({b.get('profile')}) · "
                f"{b.get('tools')} tools ({b.get('toolsPerRequest')} per request) · "
                f"budget {b.get('budget')}",
                style="bold",
            )
        )

    def _on_turn_start(self, b: dict[str, Any]) -> None:
        budget = b.get("budget") or {}
        limits = (
            f"{(budget.get('durationMs') or 0) // 1000} s, {budget.get('maxActions')} actions"
            if budget.get("mode") == "bounded"
            else "unbounded"
        )
        plan = " · plan mode" if b.get("planMode") else ""
        self.console.print(Text(f"task {b.get('turnId')} · {limits}{plan}", style="dim"))

    def _on_thought(self, b: dict[str, Any]) -> None:
        if (b.get("requests") or 0) > 1:
            self.console.print(
                Text(f"  model answered after {b['requests']} requests", style="dim")
            )

    def _on_tool_call(self, b: dict[str, Any]) -> None:
        self._calls[str(b.get("id"))] = str(b.get("name"))
        self.console.print(
            Text.assemble(
                ("→ ", "cyan"),
                (str(b.get("name")), "bold cyan"),
                (f" {b.get('summary', '')}", "cyan"),
            )
        )

    def _on_tool_result(self, b: dict[str, Any]) -> None:
        risk = _risk(b.get("risk"))
        ms = b.get("toolMs")
        took = f" ({ms:.0f} ms)" if isinstance(ms, int | float) else ""
        if b.get("ok"):
            self.console.print(Text(f"  ✓ {b.get('name')}{risk}{took}", style="green"))
        else:
            self.console.print(
                Text(f"  ✗ {b.get('name')}{risk}: {b.get('code')}{took}", style="yellow")
            )

    def _on_state(self, b: dict[str, Any]) -> None:
        header = str(b.get("header") or "")
        first = [line for line in header.splitlines() if line.startswith(("App=", "Window="))]
        shown = " ".join(first) or f"state {b.get('stateId')}"
        self.console.print(Text(f"  ◇ {shown} state_id={b.get('stateId')}", style="dim"))

    def _on_recovery(self, b: dict[str, Any]) -> None:
        self.console.print(
            Text(
                f"  ↻ the model's reply was repaired ({b.get('code')})"
                if b.get("allowed")
                else f"  ↻ no repairs left ({b.get('code')})",
                "magenta",
            )
        )

    def _on_notice(self, b: dict[str, Any]) -> None:
        code = b.get("code")
        if code == "plan_mode":
            text = "plan mode on" if b.get("on") else "plan mode off"
        elif code == "budget_exhausted":
            text = f"the bounded budget is spent ({b.get('budget')})"
        elif b.get("text"):
            text = str(b["text"])
        else:
            text = NOTICES.get(str(code), str(code))
        self.console.print(Text(f"  · {text}", style="blue"))

    def _on_model_text(self, b: dict[str, Any]) -> None:
        text = str(b.get("text") or "")
        title = "answer"
        if b.get("plan"):
            title, text = "plan", _PLAN_TAGS.sub("", text).strip()
        self.console.print(Panel(escape(text), title=title, expand=False))

    def _on_confirmation(self, b: dict[str, Any]) -> None:
        if b.get("state") == "waiting":
            self.console.print(
                Text(
                    f"  ⏸ waiting for your confirmation ({b.get('risk')}): {b.get('summary')}\n"
                    f"    run `{b.get('approve')}` (or `{b.get('deny')}`) in another terminal",
                    style="bold magenta",
                )
            )
            self._spin("waiting for your confirmation …")
        else:
            self.console.print(
                Text(f"  confirmation {b.get('confirmationId')}: {b.get('state')}", style="dim")
            )

    def _on_error(self, b: dict[str, Any]) -> None:
        self.console.print(Text(f"error: {b.get('code')}: {b.get('message')}", style="bold red"))

    def _on_turn_end(self, b: dict[str, Any]) -> None:
        own = b.get("ownMsMedian")
        own_text = f" · agent {own:.1f} ms/step" if isinstance(own, int | float) else ""
        self.console.print(
            Text(
                f"{b.get('status')} · {_plural(b.get('steps'), 'step')} · "
                f"{_plural(b.get('toolCalls'), 'tool call')} · "
                f"{_plural(b.get('actions'), 'action')} · "
                f"{(b.get('elapsedMs') or 0) / 1000:.1f} s{own_text}",
                style="bold green" if b.get("status") in ("answered", "planned") else "bold red",
            )
        )

    def close(self) -> None:
        self._spin(None)
