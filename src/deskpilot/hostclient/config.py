"""The numbers that govern the host connection (docs/architecture.md, "Numbers that matter").

They live in one frozen dataclass so a test can shrink a timeout or an interval without
monkeypatching, and production code reads the defaults from one place.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deskpilot.protocol.wire import (
    Action,
    DragAction,
    PasteTextAction,
    PressKeyAction,
    ScrollAction,
    TypeTextAction,
)

LOCAL_TRUST_ENV = "DESKPILOT_HOST_LOCAL_TRUST"
HOST_MODULE = "deskpilot.host"


def default_host_argv() -> list[str]:
    """``python -I -m deskpilot.host``: isolated mode, so PYTHONPATH, the user site and the
    working directory cannot put other code in front of the verified installed modules."""
    return [sys.executable, "-I", "-m", HOST_MODULE]


@dataclass(frozen=True, slots=True)
class HostConfig:
    # timeouts (seconds)
    request_timeout_s: float = 20.0
    max_timeout_s: float = 180.0
    action_grace_s: float = 14.0  # an instant action gets the same 20 s as any request
    post_action_observe_s: float = 6.0
    handshake_timeout_s: float = 20.0
    kill_grace_s: float = 0.3
    # the lane
    max_in_flight: int = 64
    max_queued: int = 64
    # transparent retry of idempotent reads
    retry_limit: int = 3
    retry_backoff_s: float = 0.05
    capabilities_ttl_s: float = 1.0
    # supervision
    heartbeat_interval_s: float = 5.0
    heartbeat_timeout_s: float = 5.0
    heartbeat_failure_threshold: int = 3
    restart_budget: int = 1
    # spawning
    argv: tuple[str, ...] | None = None  # None = default_host_argv()
    env: Mapping[str, str] | None = None  # None = os.environ at spawn time
    log_path: Path | None = None  # None = logs_dir()/host.log
    verify_artifact: bool = True
    #: ``--host-command``: ssh's argv to a remote ``deskpilot-host`` (hostclient/remote.py);
    #: set, it replaces ``argv`` and the local artifact check (the remote checks itself)
    remote_command: tuple[str, ...] | None = None
    #: trust the remote's SSH host key on first use (``--pin-host-key``)
    pin_host_key: bool = False

    def host_argv(self) -> list[str]:
        if self.remote_command is not None:
            from deskpilot.hostclient.remote import ssh_argv

            return list(ssh_argv(self.remote_command, pin=self.pin_host_key))
        return list(self.argv) if self.argv is not None else default_host_argv()

    def clamp(self, seconds: float) -> float:
        return max(0.001, min(seconds, self.max_timeout_s))

    def action_timeout(self, action: Action, settle_ms: int | None = None) -> float:
        """The action's own duration + a grace + the post-action observation, capped."""
        own = estimated_duration_s(action) + (settle_ms or 0) / 1000.0
        return self.clamp(own + self.action_grace_s + self.post_action_observe_s)


# Rough costs of synthetic input, used only to size timeouts: a long text typed key by key
# must not be killed by a timeout meant for a click.
_PER_CHAR_S = 0.012
_PER_CHORD_S = 0.05


def estimated_duration_s(action: Action) -> float:
    explicit = (action.duration_ms or 0) / 1000.0
    implied = 0.0
    if isinstance(action, TypeTextAction):
        implied = len(action.text) * _PER_CHAR_S
    elif isinstance(action, PasteTextAction):
        implied = 0.5
    elif isinstance(action, PressKeyAction):
        implied = len(action.keys) * _PER_CHORD_S
    elif isinstance(action, ScrollAction):
        implied = action.amount * 0.02
    elif isinstance(action, DragAction):
        implied = 0.5
    return max(explicit, implied)
