"""One desktop, one driver: an actuator lease per X display, shared by every deskpilot process.

The in-process coordinator serialises the sessions of one kernel; it cannot see a second
``deskpilot serve`` on the same display, whose synthetic input would interleave with ours
(text typed into the wrong field, both sides reporting success). This lease is the outer
layer: an exclusive ``flock`` on ``<runtime dir>/deskpilot-<uid>/leases/display-<key>.lock``.

Why a flock and not an X selection: it is taken and refused with one syscall, without an X
round trip or a server grab, and the kernel releases it when the process dies however it dies
(``kill -9`` leaves no stale lock, nothing to expire or steal). The lock belongs to the
process (a per-process registry shares one open file among the kernels of one process; a
forked child closes its inherited copy), so the holder named in a refusal is a pid.

The key is the display *and the X server's identity*: for a local display the inode and
change time of its socket ``/tmp/.X11-unix/X<n>``, which a restarted server recreates. A
process left over from a display that died therefore never blocks the new one. A TCP display
(``host:n``) is keyed by its name only.

The file's content is a one-line JSON record of the holder (pid, session, agent session,
since, whether an action is running, when the last one ended and the linger), written after
the lock is taken; a refused process reads it to name the holder and to say when to retry.
How long a process holds the lease is the coordinator's decision (see ``coordinator``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import socket
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskpilot.protocol.errors import DeskpilotError, ErrorCode

_RECORD_SIZE = 1024
_DISPLAY_RE = re.compile(r"^(?P<host>[^:]*):(?P<num>\d+)(?:\.\d+)?$")


def lease_dir() -> Path:
    """The per-user runtime directory (0700, ours, not a symlink)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    d = Path(base) / f"deskpilot-{os.getuid()}" / "leases"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    for p in (d.parent, d):
        st = os.lstat(p)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE,
                f"the lease directory {p} is not a directory owned by this user",
            )
    return d


def display_key(display: str) -> tuple[str, str]:
    """(file-safe key, how the server was identified) for an X display name."""
    m = _DISPLAY_RE.match(display.strip())
    if m is None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", display)[:64]
        return f"name-{safe}", "display name only (not an X display name)"
    host, num = m.group("host"), m.group("num")
    if host in ("", "unix") or host.startswith("/"):
        sock = Path(f"/tmp/.X11-unix/X{num}")
        try:
            st = os.stat(sock)
        except OSError:
            return f"{num}-nosocket", f"display :{num}; no socket at {sock}"
        return (
            f"{num}-{st.st_ino:x}-{st.st_ctime_ns:x}",
            f"display :{num}, X server socket inode {st.st_ino}",
        )
    safe_host = re.sub(r"[^A-Za-z0-9_.-]", "_", host)[:64]
    return f"{safe_host}-{num}", f"TCP display {host}:{num} (keyed by name)"


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    pid: int | None
    session_id: str | None = None
    agent_session_id: str | None = None
    since: float | None = None
    acting: bool = False
    last_action_at: float | None = None
    linger_s: float | None = None
    host: str | None = None

    def retry_after_ms(self, now: float | None = None) -> int | None:
        """When the holder lets go if it does not act again (unknown while it acts)."""
        if self.acting or self.last_action_at is None or self.linger_s is None:
            return None
        left = self.last_action_at + self.linger_s - (now or time.time())
        return max(0, round(left * 1000))

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "host": self.host,
            "sessionId": self.session_id,
            "agentSessionId": self.agent_session_id,
            "sinceEpochMs": None if self.since is None else round(self.since * 1000),
            "acting": self.acting,
            "retryAfterMs": self.retry_after_ms(),
        }


class _ProcessLock:
    """One open, flocked file per key per process."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.owners: set[int] = set()


_HELD: dict[Path, _ProcessLock] = {}


def _after_fork_in_child() -> None:
    # a forked child must not keep the parent's desktop once the parent is gone
    for lock in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(lock.fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _read_record(fd: int) -> dict[str, Any] | None:
    # the holder writes its record with one pwrite; retry a torn read briefly
    for _ in range(5):
        try:
            raw = os.pread(fd, _RECORD_SIZE, 0)
        except OSError:
            return None
        text = raw.decode("utf-8", "replace").strip().strip("\0").strip()
        if text:
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if isinstance(data, dict):
                return data
        time.sleep(0.005)
    return None


def _flock_pid(st: os.stat_result) -> int | None:
    """The pid /proc/locks names for an exclusive flock on this file (0 when it cannot say,
    e.g. a holder in another pid namespace), or None when nobody holds one."""
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                parts = line.split()
                # "12: FLOCK  ADVISORY  WRITE 21496 fe:00:2146346 0 EOF" ("->" marks waiters)
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == want:
                    return int(parts[4]) if parts[4].isdigit() else 0
    except OSError:
        return 0
    return None


def _holder_from(data: dict[str, Any] | None, pid: int | None = None) -> LeaseHolder:
    if data is None or (pid and data.get("pid") != pid):
        # no record yet, or one left by an earlier holder: /proc/locks names the process
        return LeaseHolder(pid or None)

    def num(key: str) -> float | None:
        v = data.get(key)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    def text(key: str) -> str | None:
        v = data.get(key)
        return v if isinstance(v, str) else None

    pid = data.get("pid")
    return LeaseHolder(
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        session_id=text("sessionId"),
        agent_session_id=text("agentSessionId"),
        since=num("since"),
        acting=data.get("acting") is True,
        last_action_at=num("lastActionAt"),
        linger_s=num("lingerS"),
        host=text("host"),
    )


class DisplayLease:
    """This kernel's view of the desktop lease of one X display (``DISPLAY`` when not given).

    Without a display there is no desktop to share and the lease is a no-op (reported as
    such)."""

    def __init__(self, display: str | None = None, *, linger_s: float = 30.0) -> None:
        self._display = display
        self.linger_s = linger_s
        self._lock: _ProcessLock | None = None
        self._record: dict[str, Any] = {}
        self.identity: str | None = None
        self.refusals = 0

    @property
    def display(self) -> str | None:
        return self._display or os.environ.get("DISPLAY") or None

    @property
    def held(self) -> bool:
        return self._lock is not None

    def path(self) -> Path | None:
        display = self.display
        if not display:
            return None
        key, self.identity = display_key(display)
        return lease_dir() / f"display-{key}.lock"

    # ------------------------------------------------------------------ take / let go
    def acquire(self, session_id: str, agent_session_id: str) -> None:
        """Hold the lease for this process (idempotent), or raise ``actuator_lease_conflict``
        naming the holder. Never blocks."""
        if self._lock is not None:
            if self._record.get("sessionId") != session_id:
                self._write(sessionId=session_id, agentSessionId=agent_session_id)
            return
        path = self.path()
        if path is None:
            return
        lock = _HELD.get(path)
        if lock is None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = _holder_from(_read_record(fd), _flock_pid(os.fstat(fd)))
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                self.refusals += 1
                raise self.conflict(holder) from None
            lock = _HELD[path] = _ProcessLock(path, fd)
        lock.owners.add(id(self))
        self._lock = lock
        now = time.time()
        self._record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "display": self.display,
            "sessionId": session_id,
            "agentSessionId": agent_session_id,
            "since": now,
            "acting": False,
            "lastActionAt": now,
            "lingerS": self.linger_s,
        }
        self._write()

    def mark(self, *, acting: bool) -> None:
        if self._lock is None:
            return
        self._write(acting=acting, lastActionAt=time.time())

    def release(self) -> bool:
        lock, self._lock = self._lock, None
        if lock is None:
            return False
        lock.owners.discard(id(self))
        if not lock.owners:
            _HELD.pop(lock.path, None)
            with contextlib.suppress(OSError):
                os.ftruncate(lock.fd, 0)
            with contextlib.suppress(OSError):
                os.close(lock.fd)  # closing the last descriptor drops the flock
        return True

    def _write(self, **changes: Any) -> None:
        assert self._lock is not None
        self._record.update(changes)
        body = json.dumps(self._record, separators=(",", ":")).encode()[: _RECORD_SIZE - 1]
        with contextlib.suppress(OSError):
            os.pwrite(self._lock.fd, body.ljust(_RECORD_SIZE - 1) + b"\n", 0)

    # ------------------------------------------------------------------ who holds it
    def holder(self) -> LeaseHolder | None:
        """The process holding this display's lease (us included), or None when free."""
        if self._lock is not None:
            return _holder_from(self._record)
        path = self.path()
        if path is None or not path.exists():
            return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            if path in _HELD:  # another kernel of this process holds it
                return _holder_from(_read_record(fd))
            pid = _flock_pid(os.fstat(fd))
            if pid is None:
                return None
            return _holder_from(_read_record(fd), pid)
        finally:
            os.close(fd)

    def conflict(self, holder: LeaseHolder) -> DeskpilotError:
        who = f"deskpilot process pid {holder.pid}" if holder.pid else "another deskpilot process"
        if holder.host and holder.host != socket.gethostname():
            who += f" on {holder.host}"
        wait = holder.retry_after_ms()
        when = (
            "it is in the middle of an action"
            if holder.acting
            else f"it lets go {wait / 1000:.0f} s after its last action unless it acts again"
            if wait is not None
            else "it holds the desktop"
        )
        details: dict[str, Any] = {"reason": "desktop_leased", "display": self.display}
        if holder.pid is not None:
            details["holderPid"] = holder.pid
        if wait is not None:
            details["retryAfterMs"] = wait
        return DeskpilotError(
            ErrorCode.ACTUATOR_LEASE_CONFLICT,
            f"Another task is driving the desktop {self.display}: {who} ({when}). Nothing was "
            "sent to the desktop. Wait and retry, or ask the person to stop the other agent.",
            retryable=True,
            details=details,
        )

    def status(self) -> dict[str, Any]:
        display = self.display
        if not display:
            return {"state": "none", "cause": "no X display (DISPLAY is not set)"}
        try:
            holder = self.holder()
        except (OSError, DeskpilotError) as exc:
            return {"state": "unknown", "display": display, "cause": str(exc)}
        state = "free" if holder is None else "held" if self.held else "held_by_other"
        return {
            "state": state,
            "display": display,
            "server": self.identity,
            "lingerS": self.linger_s,
            "holder": None if holder is None else holder.to_json(),
            "refusals": self.refusals,
        }
