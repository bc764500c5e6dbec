"""Which sessions were canceled: sticky, bounded, readable from any thread.

A canceled session stays canceled (its later actions are refused with ``session_canceled``)
until it falls out of a FIFO of 64 — a fixed bound and eviction,
so a long-lived host cannot grow without limit. Eviction forgets the oldest cancellation
first; a session evicted that way would be served again, which is why the bound is far above
the number of sessions one client keeps open.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_CANCELED_SESSIONS = 64


class SessionRegistry:
    def __init__(self, capacity: int = MAX_CANCELED_SESSIONS) -> None:
        self._capacity = capacity
        self._canceled: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def cancel(self, session_id: str) -> None:
        with self._lock:
            self._canceled.pop(session_id, None)
            self._canceled[session_id] = None
            while len(self._canceled) > self._capacity:
                self._canceled.popitem(last=False)

    def is_canceled(self, session_id: str | None) -> bool:
        if session_id is None:
            return False
        with self._lock:
            return session_id in self._canceled

    def __len__(self) -> int:
        with self._lock:
            return len(self._canceled)
