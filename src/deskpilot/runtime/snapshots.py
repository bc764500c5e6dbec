"""The seam to the snapshot vault for ``capture_app_snapshot``.

A snapshot is stored encrypted by the vault, which hands back an id and a loopback preview URL
carrying a capability token; tokens die at the end of the turn. When the vault's snapshot
service is not installed, ``capture_app_snapshot`` answers ``not_available_yet``: it never
pretends to have stored something.
"""

from __future__ import annotations

from typing import Any, Protocol

from deskpilot.hostclient.api import ObservedState


class SnapshotPort(Protocol):
    async def capture(
        self, observed: ObservedState, *, session_id: str, turn: str
    ) -> dict[str, Any]:
        """Store the capture; returns at least ``snapshotId`` and ``previewUrl``."""
        ...

    def end_turn(self, turn: str) -> None:
        """Revoke the preview tokens issued in ``turn``."""
        ...

    async def close(self) -> None: ...


def snapshot_port() -> SnapshotPort | None:
    """The vault adapter when the vault provides a snapshot service, else None."""
    return None
