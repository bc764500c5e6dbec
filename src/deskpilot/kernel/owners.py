"""Who drives a session: the process that created it (``sessions.owner_pid``).

Only that process can carry out a control of its session (its operator, its action in flight
and the runtime's books live there), so another process asks it through a control request
(kernel/control_requests.py) — when it is still alive. A pid can be reused once its process
has ended: a process that started after the session was created cannot be the one that
created it, so it does not count as the owner (read from ``/proc``; without it, a pid that
answers signal 0 counts as alive).
"""

from __future__ import annotations

import os
from functools import lru_cache

from deskpilot.store.session_rows import SessionRow

#: slack between the session's clock time and the process start computed from /proc
_START_SLACK_S = 2.0


@lru_cache(maxsize=1)
def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def process_started_at(pid: int) -> float | None:
    """The process's start as a Unix time, from /proc (None when it cannot be read)."""
    boot = _boot_time()
    if boot is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    fields = text.rsplit(")", 1)[-1].split()
    try:
        ticks = int(fields[19])  # field 22 of the whole line: starttime, in clock ticks
    except (IndexError, ValueError):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def owner_alive(row: SessionRow) -> bool:
    """True while the process that created the session still runs."""
    pid = row.owner_pid
    if pid is None or not pid_alive(pid):
        return False
    if pid == os.getpid():
        return True
    started = process_started_at(pid)
    return started is None or started <= row.created_at + _START_SLACK_S


def owned_here(row: SessionRow) -> bool:
    return row.owner_pid == os.getpid()
