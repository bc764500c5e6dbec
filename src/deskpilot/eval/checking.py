"""Deciding a task's success criteria after its agent ended, by a process that is not the agent.

The eval runs its own host (the same ``python -I -m deskpilot.host`` the servers spawn, or the
command it is given — a future ``ssh … deskpilot-host``) on the task's desktop, lists the
windows, observes the task's target app and hands both to the verification engine
(runtime/verification/). What the agent said it did counts for nothing here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.config import HostConfig
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.verification import (
    AccessibilitySpec,
    ApplicationStateSpec,
    DomSpec,
    VerificationSpec,
    VisualSpec,
)
from deskpilot.protocol.wire import TargetSpec, WindowInfo
from deskpilot.runtime.verification import Evidence, overall, verify

#: the session name the eval's own observations are made under (never an agent's)
CHECK_SESSION = "eval-check"
#: a target that is not up yet (a window still mapping) gets this long to show
TARGET_WAIT_S = 5.0


@dataclass(frozen=True)
class Checked:
    passed: bool
    verdicts: list[dict[str, Any]]
    #: why the target could not be observed (the verdicts then say undecidable/failed)
    observe_error: str | None
    #: seconds from the check's start to its first observation
    first_observation_s: float | None


def host_config(
    env: Mapping[str, str], host_command: Sequence[str] | None, log_path: Path
) -> HostConfig:
    return HostConfig(
        argv=None if host_command is None else tuple(host_command),
        env=dict(env),
        log_path=log_path,
    )


def needs_state(specs: Sequence[VerificationSpec]) -> bool:
    """Whether any spec looks at the target window (a file-only task's app may be gone: a
    zenity dialog ends when it is submitted, and is not waited for)."""
    return any(
        isinstance(s, AccessibilitySpec | VisualSpec | DomSpec)
        or (isinstance(s, ApplicationStateSpec) and s.app is None)
        for s in specs
    )


def needs_windows(specs: Sequence[VerificationSpec]) -> bool:
    return any(isinstance(s, ApplicationStateSpec) for s in specs)


async def _observe(
    backend: HostBackend, target: str | None
) -> tuple[ObservedState | None, list[WindowInfo] | None, str | None]:
    windows: list[WindowInfo] | None = None
    try:
        windows = await backend.list_windows()
    except DeskpilotError as exc:
        return None, None, f"{exc.code.value}: {exc.message}"
    if target is None:
        return None, windows, None
    deadline = time.monotonic() + TARGET_WAIT_S
    while True:
        try:
            state = await backend.observe(
                CHECK_SESSION, TargetSpec(app=target), include_screenshot=False
            )
            return state, windows, None
        except DeskpilotError as exc:
            if time.monotonic() > deadline:
                return None, windows, f"{exc.code.value}: {exc.message}"
        await asyncio.sleep(0.3)


async def check_async(
    specs: Sequence[VerificationSpec],
    target: str | None,
    started_at: float,
    config: HostConfig,
) -> Checked:
    t0 = time.monotonic()
    state: ObservedState | None = None
    windows: list[WindowInfo] | None = None
    error: str | None = None
    if needs_state(specs) or needs_windows(specs):
        backend = HostBackend(config, heartbeat=False)
        try:
            state, windows, error = await _observe(backend, target if needs_state(specs) else None)
        finally:
            await backend.close()
    first = time.monotonic() - t0 if state is not None else None
    evidence = Evidence(state=state, windows=windows, task_started_at=started_at)
    verdicts = await verify(specs, evidence, allow_external_readback=False)
    return Checked(overall(verdicts), [v.to_json() for v in verdicts], error, first)


def check(
    specs: Sequence[VerificationSpec],
    target: str | None,
    started_at: float,
    config: HostConfig,
) -> Checked:
    """Blocking: one private event loop per call (each worker thread checks its own task)."""
    return asyncio.run(check_async(specs, target, started_at, config))
