"""Feature flags from ``DESKPILOT_*`` environment variables, with automatic off-only rollback.

Parsing rule (docs/kernel.md, "Flags and rollback"): a flag is on by default; only ``0``,
``false``, ``no`` or ``off`` (any case, surrounding blanks ignored) turn it off, and any other
non-empty value — even ``anything`` — leaves it on. A flag can be turned off at run time by the
rollout controller, never on; that lasts for the process only.

Every flag below has a production reader, named in :attr:`FlagSpec.consumer`; a test checks
that the named module really reads it. A flag with no reader
(installedArtifactDiagnostics, backgroundSemanticLane, activityTimeline,
visibleControlIndicator) is not declared; flags whose readers live in parts not built yet
(a picture-in-picture panel) are declared when their reader lands, not before.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

OFF_VALUES = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class FlagSpec:
    name: str
    env: str
    consumer: str  # the module that changes behaviour on it
    purpose: str


FLAGS: dict[str, FlagSpec] = {
    spec.name: spec
    for spec in (
        FlagSpec(
            "gracefulCancel",
            "DESKPILOT_GRACEFUL_CANCEL",
            "deskpilot.kernel.broker.controls",
            "pause/stop first let the in-flight action end on its own for a short grace "
            "(keeping the host process), and abort it only after; off = abort at once",
        ),
        FlagSpec(
            "escapeInterrupt",
            "DESKPILOT_ESCAPE_INTERRUPT",
            "deskpilot.kernel.killswitch.arming",
            "the person's physical Escape during an action cancels that action (handoff_required)",
        ),
        FlagSpec(
            "actionBatch",
            "DESKPILOT_ACTION_BATCH",
            "deskpilot.runtime.delegated.operator",
            "the delegated operator offers the model act_batch (2-8 actions from one decision, "
            "each checked for freshness in turn); off = one action per decision",
        ),
    )
}


def parse_flag(value: str | None) -> bool:
    if value is None:
        return True
    return value.strip().lower() not in OFF_VALUES


FlagSource = Literal["default", "env", "rollback"]


@dataclass(frozen=True, slots=True)
class FlagState:
    name: str
    enabled: bool
    source: FlagSource
    reason: str | None = None
    changed_at: float | None = None


class Flags:
    """The process's flag values. Thread-safe: the kill-switch thread reads them too."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._states: dict[str, FlagState] = {}
        for spec in FLAGS.values():
            raw = env.get(spec.env)
            source: FlagSource = "default" if raw is None or raw == "" else "env"
            self._states[spec.name] = FlagState(spec.name, parse_flag(raw or None), source)
        self._listeners: list[Callable[[FlagState], None]] = []

    def enabled(self, name: str) -> bool:
        if name not in FLAGS:
            raise KeyError(f"unknown flag {name!r}")
        return self._states[name].enabled

    def disable(self, name: str, reason: str) -> bool:
        """Turn a flag off for this process (rollback); False if it already was off."""
        with self._lock:
            current = self._states[name]
            if not current.enabled:
                return False
            new = FlagState(name, False, "rollback", reason, time.time())
            self._states[name] = new
            listeners = list(self._listeners)
        for listener in listeners:
            listener(new)
        return True

    def on_change(self, listener: Callable[[FlagState], None]) -> None:
        self._listeners.append(listener)

    def snapshot(self) -> dict[str, dict[str, object]]:
        return {
            n: {"enabled": s.enabled, "source": s.source, "reason": s.reason}
            for n, s in self._states.items()
        }
