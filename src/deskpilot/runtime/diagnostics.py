"""What every tool result says about itself (docs/mcp.md, "Diagnostics": a result is not a boolean).

A diagnostic answers three questions an agent must not guess: was the action dispatched
(``actionOutcome``), is there a state it can act on (``observationOutcome``), and where the time
went (``timings``). It carries codes, counts and durations only: never typed text, UI text,
window titles, screenshots or the body of an error that came from below us.
"""

from __future__ import annotations

import enum
import json
import time
from dataclasses import dataclass, field
from typing import Any

DIAGNOSTIC_PREFIX = "deskpilot diagnostic: "
#: codes an action's result may carry that are not errors: it ran, and the result says what
#: could (``action_noop``) or could not (``action_unconfirmed``) be seen of it
NOT_ERRORS = frozenset({"action_noop", "action_unconfirmed"})


class ActionOutcome(enum.StrEnum):
    #: local validation, budget, recovery or preflight stopped it before dispatch
    NOT_DISPATCHED = "not_dispatched"
    #: the action call returned normally; says nothing about the goal being reached
    CALL_RETURNED = "call_returned"
    #: it may have run, but no reliable return came back: never retried automatically
    UNKNOWN = "unknown"
    #: a read-only or control call
    NOT_APPLICABLE = "not_applicable"


class ObservationOutcome(enum.StrEnum):
    #: a usable state with a fresh stateId
    AVAILABLE = "available"
    #: something came back but not enough to issue the next stateId: observe explicitly
    NOT_REUSABLE = "not_reusable"
    #: observing failed or was impossible
    UNAVAILABLE = "unavailable"
    #: the call never reached the observation stage
    NOT_ATTEMPTED = "not_attempted"


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 2)


@dataclass
class Timings:
    """Stage durations of one tool call, in milliseconds.

    ``approvalMs`` is a *subset* of ``rpcMs`` (never add them). ``betweenCallsMs`` is the gap
    since the previous call of the same agent session ended: it contains the model's planning,
    other tools and user waits, so it is not model latency.

    ``toolkitDelayMs`` is another *subset* of ``rpcMs``: the time the app itself took to start
    reacting to the call's semantic actions, as the host measured it (from the app answering
    the AT-SPI call to its first accessibility event; GTK buttons ≈ 250 ms, see
    ``host/settle.py``), summed over the call's actions. ``None`` when no action of the call
    was semantic with a reaction to time (reads, controls, synthetic input, an action the app
    showed no reaction to). deskpilot's own share of a call is ``toolElapsedMs`` −
    ``toolkitDelayMs`` − ``approvalMs``.
    """

    initialize_ms: float = 0.0
    discovery_ms: float = 0.0
    rpc_ms: float = 0.0
    approval_ms: float = 0.0
    bridge_total_ms: float = 0.0
    format_ms: float = 0.0
    tool_elapsed_ms: float = 0.0
    between_calls_ms: float | None = None
    toolkit_delay_ms: float | None = None

    def add_toolkit_delay(self, ms: float | None) -> None:
        """Count one action's toolkit delay (from its host result); None adds nothing."""
        if ms is not None:
            self.toolkit_delay_ms = (self.toolkit_delay_ms or 0.0) + ms

    def to_json(self) -> dict[str, Any]:
        return {
            "initializeMs": round(self.initialize_ms, 2),
            "discoveryMs": round(self.discovery_ms, 2),
            "rpcMs": round(self.rpc_ms, 2),
            "approvalMs": round(self.approval_ms, 2),
            "bridgeTotalMs": round(self.bridge_total_ms, 2),
            "formatMs": round(self.format_ms, 2),
            "toolElapsedMs": round(self.tool_elapsed_ms, 2),
            "betweenCallsMs": None
            if self.between_calls_ms is None
            else round(self.between_calls_ms, 2),
            "toolkitDelayMs": None
            if self.toolkit_delay_ms is None
            else round(self.toolkit_delay_ms, 2),
        }


class Stopwatch:
    """Accumulates stage time; ``with watch.stage("rpc"):`` adds to that stage."""

    def __init__(self, timings: Timings) -> None:
        self.timings = timings

    def add(self, stage: str, seconds: float) -> None:
        attr = f"{stage}_ms"
        setattr(self.timings, attr, getattr(self.timings, attr) + _ms(seconds))

    def stage(self, stage: str) -> _Stage:
        return _Stage(self, stage)


class _Stage:
    def __init__(self, watch: Stopwatch, stage: str) -> None:
        self._watch = watch
        self._stage = stage
        self._t0 = 0.0

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self._watch.add(self._stage, time.perf_counter() - self._t0)


@dataclass
class StepRecord:
    """One wire action of a tool call (a type_text can be focus + type + Enter)."""

    kind: str
    outcome: ActionOutcome
    method: str | None = None
    code: str | None = None
    healed: bool = False
    #: the kernel's rating of it (L0–L4) and its ledger row, once it was rated and recorded
    risk: str | None = None
    action_id: str | None = None
    #: what ended the host's wait for the UI to settle after it (``ActionResult.wait_bound``:
    #: ``event``, ``toolkit_gtk``, ``toolkit_none``, ``first_event``, ``pixels``, ``budget``);
    #: None when there was no wait
    wait_bound: str | None = None
    #: what the host saw of its effect where it checked one (``ActionResult.effect``:
    #: ``confirmed``, ``unconfirmed``); None when nothing was checked. Its note (the host's
    #: words on why) goes into the result's text, not here
    effect: str | None = None
    #: the host's words on why the effect is unconfirmed (``ActionResult.effect_note``, never
    #: typed text): shown in the result's text, never in the diagnostic
    effect_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "outcome": self.outcome.value}
        if self.method:
            out["method"] = self.method
        if self.wait_bound:
            out["waitBound"] = self.wait_bound
        if self.effect:
            out["effect"] = self.effect
        if self.risk:
            out["risk"] = self.risk
        if self.code:
            out["code"] = self.code
        if self.healed:
            out["healed"] = True
        return out


@dataclass
class Diagnostic:
    tool: str
    action_outcome: ActionOutcome = ActionOutcome.NOT_APPLICABLE
    observation_outcome: ObservationOutcome = ObservationOutcome.NOT_ATTEMPTED
    timings: Timings = field(default_factory=Timings)
    code: str | None = None
    message: str | None = None
    retryable: bool | None = None
    state_id_issued: bool = False
    #: why a post-action state was not reusable (condition names, never content)
    not_reusable: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    #: stale_frame / stale_tree / focus_mismatch healed by one re-observe + retry
    healed: int = 0
    noop: bool = False
    #: what the result may say of the action's effect (runtime/effects.py): "confirmed" (the
    #: host saw it), "unconfirmed" (it could not be seen; ``effect_reason`` says why), None
    effect: str | None = None
    effect_reason: str | None = None
    turn: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        return self.code is not None and self.code not in NOT_ERRORS

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool}
        if self.code is not None:
            out["code"] = self.code
        if self.message is not None:
            out["message"] = self.message
        if self.retryable is not None:
            out["retryable"] = self.retryable
        out["actionOutcome"] = self.action_outcome.value
        out["observationOutcome"] = self.observation_outcome.value
        out["stateIdIssued"] = self.state_id_issued
        if self.not_reusable:
            out["notReusable"] = list(self.not_reusable)
        if self.steps:
            out["steps"] = [s.to_json() for s in self.steps]
            out["ledgerRows"] = sum(
                1 for s in self.steps if s.outcome is not ActionOutcome.NOT_DISPATCHED
            )
        if self.healed:
            out["healed"] = self.healed
        if self.noop:
            out["noop"] = True
        if self.effect:
            out["effect"] = self.effect
        if self.effect_reason:
            out["effectReason"] = self.effect_reason
        out.update(self.extra)
        out["timings"] = self.timings.to_json()
        return out

    def render(self) -> str:
        return DIAGNOSTIC_PREFIX + json.dumps(self.to_json(), separators=(",", ":"))


def parse_diagnostic(text: str) -> dict[str, Any] | None:
    """The diagnostic object in a result text (the last ``deskpilot diagnostic:`` line)."""
    for line in reversed(text.splitlines()):
        if line.startswith(DIAGNOSTIC_PREFIX):
            value = json.loads(line[len(DIAGNOSTIC_PREFIX) :])
            return value if isinstance(value, dict) else None
    return None
