"""How many private desktops this machine can hold at once, and what one really costs.

A desktop running a task is an Xvfb, a session bus, the accessibility bus, the task's apps, a
deskpilot server (or ``deskpilot run``) and its host, and the agent: each desktop keeps CPU
busy in bursts (an app's start, a tree walk) and holds memory for its whole task. ``--desktops
N`` is refused when N exceeds :data:`DESKTOPS_PER_CORE` per core, or when N desktops of
:data:`DESKTOP_MB` would not fit in the memory available now (``MemAvailable``) with a
reserve kept for the person's own programs. Each task's record carries what its desktop
really used (:func:`desktop_rss_mb`, sampled each second while its agent ran), so the
estimate can be checked against the run (docs/benchmarks.md has the measured figures).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from deskpilot.eval import procfs

#: a task desktop's memory (PSS, MiB), rounded up: the starter suite's largest, a Chromium
#: task, peaked at 623 MiB (docs/benchmarks.md, "deskpilot eval")
DESKTOP_MB = 700
#: desktops per core: two overlap one's waits (an app's start, a settle) with the other's work
DESKTOPS_PER_CORE = 2
#: memory kept free for everything else on the machine, MiB
RESERVE_MB = 1024


class CapacityError(ValueError):
    """``--desktops N`` is more than the machine can hold; the message says why."""


@dataclass(frozen=True)
class Machine:
    cores: int
    mem_available_mb: int

    @classmethod
    def here(cls) -> Machine:
        return cls(os.cpu_count() or 1, mem_available_mb())

    def most(self, desktop_mb: int = DESKTOP_MB) -> int:
        by_cores = self.cores * DESKTOPS_PER_CORE
        by_memory = max(0, (self.mem_available_mb - RESERVE_MB) // desktop_mb)
        return max(0, min(by_cores, by_memory))

    def check(self, n: int, desktop_mb: int = DESKTOP_MB) -> None:
        if n < 1:
            raise CapacityError("--desktops must be at least 1")
        by_cores = self.cores * DESKTOPS_PER_CORE
        if n > by_cores:
            raise CapacityError(
                f"--desktops {n}: this machine has {self.cores} core(s); at most "
                f"{by_cores} desktops ({DESKTOPS_PER_CORE} per core) run side by side "
                "without starving each other's apps"
            )
        need = n * desktop_mb + RESERVE_MB
        if need > self.mem_available_mb:
            raise CapacityError(
                f"--desktops {n}: {n} desktops need about {n * desktop_mb} MiB "
                f"({desktop_mb} MiB each) plus {RESERVE_MB} MiB kept free, and only "
                f"{self.mem_available_mb} MiB is available now; at most {self.most(desktop_mb)}"
            )

    def to_json(self) -> dict[str, int]:
        return {"cores": self.cores, "memAvailableMb": self.mem_available_mb}


def mem_available_mb(meminfo: Path = Path("/proc/meminfo")) -> int:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _rss_kb(pid: int) -> int:
    """The process's proportional share of memory (PSS: a page shared by k processes counts
    1/k in each, so a desktop's sum is what it really holds), else its resident set."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def desktop_pids(display: str, roots: tuple[int, ...] = ()) -> set[int]:
    """Every process of this user on ``display`` (its ``DISPLAY``), the ``roots`` (the Xvfb
    and the buses run without one; the task's apps), and all their descendants (Chromium's
    renderers and zygotes run with an environment of their own)."""
    parents = procfs.parents()
    found = {p for p in roots if p in parents}
    found |= {p for p in parents if p not in found and procfs.display_of(p) == display}
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def desktop_rss_mb(display: str, roots: tuple[int, ...] = ()) -> float:
    """Memory (PSS, MiB) of :func:`desktop_pids`: its apps, buses, servers and hosts. Pages
    shared with processes outside the desktop count in part, as PSS shares them."""
    return round(sum(_rss_kb(p) for p in desktop_pids(display, roots)) / 1024, 1)


class PeakMemory:
    """Samples :func:`desktop_rss_mb` every ``interval_s`` in a thread while the agent runs;
    ``stop`` returns the highest sample (the desktop's footprint with its server and host)."""

    def __init__(self, display: str, roots: tuple[int, ...], interval_s: float = 1.0):
        self.display = display
        self.roots = roots
        self.interval_s = interval_s
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eval-memory", daemon=True)

    def _run(self) -> None:
        while True:
            self.peak = max(self.peak, desktop_rss_mb(self.display, self.roots))
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
