"""The seam to the snapshot vault for ``capture_app_snapshot``.

A snapshot is stored encrypted by the vault (secure regions painted out first, credential apps
never captured), which hands back an id and, when the preview server runs, a loopback preview
URL with a capability token; tokens issued in a turn are revoked when the turn ends. When the
vault cannot be opened, ``capture_app_snapshot`` answers ``not_available_yet``: it never
pretends to have stored something.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.runtime.refusals import refusal

log = logging.getLogger(__name__)


class SnapshotPort(Protocol):
    async def capture(
        self, observed: ObservedState, *, session_id: str, turn: str
    ) -> dict[str, Any]:
        """Store the capture; returns at least ``snapshotId`` (and ``previewUrl``)."""
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

    def end_turn(self, turn: str) -> None:
        self.service.end_turn(turn)

    async def close(self) -> None:
        self.service.stop_maintenance()


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
