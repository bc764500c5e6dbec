"""What the eval reads of other processes, from ``/proc``: one reader for every part of it.

The eval tells its processes apart by what the kernel says of them, not by what they claim:
an app's ``DISPLAY`` is read from its environment after it started (task_setup.py: an app on
any display but the task's is ended), a desktop's processes are the ones whose environment
names its display (capacity.py: its memory), a lost Ray actor's processes are the ones whose
environment carries its token (ray_engine.py: the sweep), what an agent left running is
what carries its run's token (agents.py). Only this user's processes are read; one that is
gone (or not readable) reads as nothing.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def environ(pid: int) -> list[bytes]:
    """The process's environment as the kernel holds it (``NAME=value`` items), or []."""
    try:
        return (PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return []


def env_value(pid: int, name: str) -> str | None:
    """One variable of :func:`environ` (None when unset or unreadable)."""
    prefix = name.encode() + b"="
    for item in environ(pid):
        if item.startswith(prefix):
            return item[len(prefix) :].decode("utf-8", "replace")
    return None


def display_of(pid: int) -> str | None:
    """The ``DISPLAY`` the process really runs with."""
    return env_value(pid, "DISPLAY")


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (which may hold spaces and parentheses)."""
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def is_zombie(pid: int) -> bool:
    """Gone, or ended and not yet reaped (a zombie holds no resources but its pid)."""
    fields = _stat_fields(pid)
    return fields is None or fields[0] in ("Z", "X")


def user_pids() -> list[int]:
    """Every process of this user (but this one)."""
    me, uid = os.getpid(), os.getuid()
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if entry.stat().st_uid == uid:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def parents() -> dict[int, int]:
    """pid → parent pid of every process of this user."""
    out: dict[int, int] = {}
    for pid in user_pids():
        fields = _stat_fields(pid)
        if fields is not None:
            out[pid] = int(fields[1])
    return out


def end_marked(mark: bytes, grace_s: float) -> list[int]:
    """End every process of this user whose environment holds the item ``mark``
    (``NAME=value``): SIGTERM, up to ``grace_s`` for them to go, then SIGKILL. Returns the
    pids it found."""
    found = [pid for pid in user_pids() if mark in environ(pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in found:
            try:
                os.kill(pid, sig)
                alive.append(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while sig == signal.SIGTERM and alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in alive if not is_zombie(p)]
        if not alive:
            break
    return found
