"""The one host process a dashboard process reads the desktop through.

The live view (frames, sensitive regions, the target chooser) and the sessions page's
"Change window" list both need the desktop; they share this lazily started
:class:`~deskpilot.hostclient.backend.HostBackend` instead of each spawning its own host. It
only ever reads (capture, observe without binding, list_windows), so a crashed host is simply
started again: its restart budget is large, unlike an acting session's single restart, and it
runs without the heartbeat (idle, it does nothing).
"""

from __future__ import annotations

import asyncio

from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.config import HostConfig

#: a reading host may be restarted this often over the dashboard's life
READER_RESTART_BUDGET = 10_000


class SharedHost:
    def __init__(self) -> None:
        self._backend: HostBackend | None = None
        self._lock = asyncio.Lock()

    async def backend(self) -> HostBackend:
        async with self._lock:
            if self._backend is None:
                config = HostConfig(restart_budget=READER_RESTART_BUDGET)
                self._backend = HostBackend(config, heartbeat=False)
            return self._backend

    async def close(self) -> None:
        async with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            await backend.close()
