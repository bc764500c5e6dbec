"""The seam to the snapshot vault: ``capture_app_snapshot`` and the evidence frames of actions.

A snapshot is stored encrypted by the vault (secure regions painted out first, credential apps
never captured), which hands back an id and, when the preview server runs, a loopback preview
URL with a capability token; tokens issued in a turn are revoked when the turn ends. When the
vault cannot be opened, ``capture_app_snapshot`` answers ``not_available_yet``: it never
pretends to have stored something.

Evidence frames (:class:`ActionEvidence`): while ``fullRecordingEnabled`` is on, every atomic
action tool call — an MCP client's, the delegated operator's, ``deskpilot agent``'s, since all
act through ``runtime/action_tools.py`` — leaves two frames in the vault, the window just
before the action went out (a capture, which does not stale the agent's state) and the
settled window after it (the post-action state the host carried back). Off, nothing is
captured or stored. A failure to record evidence is logged by its type and never fails the
action: the evidence is for the audit, the action is what the person asked for.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from deskpilot.kernel.port import KernelPort
from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import TargetSpec
from deskpilot.runtime.refusals import refusal

log = logging.getLogger(__name__)


class SnapshotPort(Protocol):
    async def capture(
        self, observed: ObservedState, *, session_id: str, turn: str
    ) -> dict[str, Any]:
        """Store the capture; returns at least ``snapshotId`` (and ``previewUrl``)."""
        ...

    async def record_evidence(
        self,
        observed: ObservedState,
        *,
        session_id: str,
        trigger: str,
        action_id: str | None = None,
    ) -> str | None:
        """Store an evidence frame of an action; its snapshot id, or None when nothing was
        stored (full recording off, no image, a failure — never raised)."""
        ...

    def end_turn(self, turn: str) -> None:
        """Revoke the preview tokens issued in ``turn``."""
        ...

    async def close(self) -> None: ...


class VaultSnapshots:
    """``SnapshotPort`` over ``deskpilot.vault.service.SnapshotService``."""

    def __init__(self, service: Any) -> None:
        self.service = service

    async def capture(
        self, observed: ObservedState, *, session_id: str, turn: str
    ) -> dict[str, Any]:
        if observed.png is None:
            raise refusal(ErrorCode.CAPTURE_FAILED, "The capture returned no image.")
        obs = observed.observation
        record = await asyncio.to_thread(
            self.service.capture_app_snapshot,
            observed.png,
            app=obs.app,
            window=obs.window,
            # taken through a capture that carries the tree, so the secure regions are known;
            # a window without an accessibility tree has none reported: say "not known"
            # rather than "nothing to hide"
            sensitive_regions=obs.sensitive_regions if obs.tree else None,
            session_id=session_id,
            turn_id=turn,
        )
        data: dict[str, Any] = record.to_json()
        if data.get("previewUrl") is None:
            data["previewNote"] = "no preview server is running in this process"
        return data

    async def record_evidence(
        self,
        observed: ObservedState,
        *,
        session_id: str,
        trigger: str,
        action_id: str | None = None,
    ) -> str | None:
        if observed.png is None:
            return None
        obs = observed.observation
        try:
            record = await asyncio.to_thread(
                self.service.record_evidence,
                observed.png,
                app=obs.app,
                window=obs.window,
                sensitive_regions=obs.sensitive_regions if obs.tree else None,
                session_id=session_id,
                trigger=trigger,
                frame_id=obs.frame_id,
                action_id=action_id,
            )
        except Exception as exc:  # never fail the action over its evidence
            log.warning("evidence frame not stored: %s", type(exc).__name__)
            return None
        return None if record is None else str(record.id)

    def end_turn(self, turn: str) -> None:
        self.service.end_turn(turn)

    async def close(self) -> None:
        self.service.stop_maintenance()


class ActionEvidence:
    """The before/after evidence frames of one action tool call (module docstring).

    ``begin`` captures the window before anything is dispatched — only when the kernel's
    settings (another process's write shows within a second) have ``fullRecordingEnabled`` on
    and a vault is open; ``finish`` stores that frame and the one after, tied to the ledger
    ids of the actions that ran. Both are no-ops otherwise.
    """

    def __init__(
        self, snapshots: SnapshotPort | None, session_id: str, before: ObservedState | None
    ) -> None:
        self._snapshots = snapshots
        self._session_id = session_id
        self._before = before
        self.action_ids: list[str] = []
        #: the stored snapshot ids, "before" then "after" (for tests and the diagnostic)
        self.stored: list[str] = []

    @classmethod
    async def begin(
        cls,
        kernel: KernelPort,
        snapshots: SnapshotPort | None,
        session_id: str,
        target: TargetSpec,
    ) -> ActionEvidence:
        if snapshots is None or not kernel.settings().full_recording_enabled:
            return cls(None, session_id, None)
        try:
            before = await kernel.capture(session_id, target)
        except Exception as exc:  # the action goes ahead without its before frame
            log.warning("evidence: the before frame could not be captured: %s", type(exc).__name__)
            before = None
        return cls(snapshots, session_id, before)

    @property
    def active(self) -> bool:
        return self._snapshots is not None

    def acted(self, action_id: str | None) -> None:
        if action_id:
            self.action_ids.append(action_id)

    async def finish(
        self, kernel: KernelPort, target: TargetSpec, post: ObservedState | None
    ) -> None:
        """Store the before frame and the after frame (``post``, else a fresh capture)."""
        snapshots = self._snapshots
        if snapshots is None:
            return
        self._snapshots = None  # once per tool call
        first = self.action_ids[0] if self.action_ids else None
        last = self.action_ids[-1] if self.action_ids else None
        if self._before is not None:
            stored = await snapshots.record_evidence(
                self._before, session_id=self._session_id, trigger="before", action_id=first
            )
            if stored:
                self.stored.append(stored)
        after = post if post is not None and post.png is not None else None
        if after is None:
            try:
                after = await kernel.capture(self._session_id, target)
            except Exception as exc:
                log.warning(
                    "evidence: the after frame could not be captured: %s", type(exc).__name__
                )
                return
        stored = await snapshots.record_evidence(
            after, session_id=self._session_id, trigger="after", action_id=last
        )
        if stored:
            self.stored.append(stored)


def snapshot_port() -> SnapshotPort | None:
    """The vault adapter, or None when the vault cannot be opened here."""
    try:
        from deskpilot.store.db import Database
        from deskpilot.vault.service import SnapshotService
        from deskpilot.vault.store import Vault

        service = SnapshotService(Database(), Vault.open())
    except Exception as exc:  # no key storage, unreadable vault, ...: say so, do not crash
        log.warning("snapshot vault unavailable: %s", type(exc).__name__)
        return None
    return VaultSnapshots(service)
