"""The process table, read from ``/proc``: what ``running`` is decided from on Linux.

A process is named by its ``comm`` (the kernel keeps 15 characters of it), the basename of its
``argv[0]`` (and of the first word of it: Chromium rewrites its command line into one string)
and the basename of ``/proc/PID/exe`` when it may be read. Zombies and dead tasks (state Z, X)
do not count as running: a killed child nobody has waited for yet is already gone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

PROC: Final = "/proc"
COMM_CHARS: Final = 15


@dataclass(frozen=True, slots=True)
class Process:
    pid: int
    comm: str
    names: frozenset[str]  # casefolded: comm, argv[0] basenames, exe basename


def available() -> bool:
    return os.path.isdir(os.path.join(PROC, "self"))


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(65_536)
    except OSError:
        return None


def _state(stat: bytes) -> str:
    # "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ")"
    tail = stat.rpartition(b")")[2].split()
    return tail[0].decode("ascii", "replace") if tail else "?"


def read_process(pid: int) -> Process | None:
    base = os.path.join(PROC, str(pid))
    stat = _read(os.path.join(base, "stat"))
    if stat is None or _state(stat) in ("Z", "X", "x"):
        return None
    comm = (_read(os.path.join(base, "comm")) or b"").decode("utf-8", "replace").strip()
    names = {comm.casefold()} if comm else set()
    cmdline = _read(os.path.join(base, "cmdline")) or b""
    argv0 = cmdline.split(b"\0", 1)[0].decode("utf-8", "replace")
    if argv0:
        names.add(os.path.basename(argv0).casefold())
        names.add(os.path.basename(argv0.split(" ", 1)[0]).casefold())
    try:
        exe = os.readlink(os.path.join(base, "exe")).removesuffix(" (deleted)")
        names.add(os.path.basename(exe).casefold())
    except OSError:
        pass  # another user's process, or a kernel thread
    names.discard("")
    return Process(pid, comm, frozenset(names))


def processes() -> list[Process]:
    """Every live process (blocking: call it in a thread)."""
    out: list[Process] = []
    try:
        entries = os.listdir(PROC)
    except OSError:
        return out
    for entry in entries:
        if entry.isdigit():
            p = read_process(int(entry))
            if p is not None:
                out.append(p)
    return out


def named(process: Process, wanted: set[str]) -> bool:
    """The process goes by one of the (casefolded) names; pids match as text."""
    if str(process.pid) in wanted:
        return True
    if process.names & wanted:
        return True
    comm = process.comm.casefold()
    # comm is cut at 15 characters: "gnome-calculato" is gnome-calculator
    return len(comm) == COMM_CHARS and any(
        len(w) > COMM_CHARS and w[:COMM_CHARS] == comm for w in wanted
    )
