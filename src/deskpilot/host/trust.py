"""Who may start the host: verified at start, before anything else.

The rules and what they protect: docs/security.md, "Host → parent".

The host drives the desktop, so it only runs for the deskpilot process that spawned it:

- the parent runs as the same user (real, effective, saved and filesystem uid all ours);
- the parent is the same Python interpreter binary as the host (``/proc/PPID/exe`` is the
  same file as ``/proc/self/exe``) and its command line runs deskpilot: the ``deskpilot``
  console script of this environment, or ``-m deskpilot`` / ``-m deskpilot.<module>``;
- the parent is the same process for the whole check: its start time (``/proc/PPID/stat``
  field 22) is read before and after, and the parent pid must not have changed, so a parent
  that exits and whose pid is reused mid-check is caught.

Anything else exits 77 (authentication failure). Started by hand from a shell, the parent is
the shell, so the host refuses to run.

``DESKPILOT_HOST_LOCAL_TRUST=1`` skips the check, for development only: it is honoured when
this deskpilot is an editable install (PEP 610 ``direct_url.json`` says ``editable``) or not
installed at all (run from a source tree), and refused (exit 77) for a regular install, as
local trust is refused for a signed app.

These checks guard the wiring (who talks to the host), not the display: on X11 any client of
the display can capture and inject. See docs/security.md.

This module uses only the standard library: it runs before the host imports anything else.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

#: protocol/host_exits.py's EXIT_AUTH_FAILURE, written out: importing the protocol package
#: would load pydantic before the parent is verified (tests/host/test_settings.py checks
#: the two agree)
EXIT_AUTH_FAILURE = 77

LOCAL_TRUST_ENV = "DESKPILOT_HOST_LOCAL_TRUST"
DIST_NAME = "deskpilot"
PROC = Path("/proc")


class ParentUntrusted(Exception):
    """The parent could not be verified; the message says why (no secrets in it)."""


@dataclass(frozen=True, slots=True)
class ParentInfo:
    pid: int
    start_time: int
    exe: str
    argv: tuple[str, ...]


def _start_time(pid: int, proc: Path = PROC) -> int:
    raw = (proc / str(pid) / "stat").read_bytes()
    # the comm field may contain spaces and parentheses; fields resume after the last ')'
    rest = raw[raw.rindex(b")") + 2 :].split()
    return int(rest[19])  # field 22 overall: starttime, in clock ticks since boot


def _uids(pid: int, proc: Path = PROC) -> tuple[int, ...]:
    for line in (proc / str(pid) / "status").read_text().splitlines():
        if line.startswith("Uid:"):
            return tuple(int(x) for x in line.split()[1:])
    raise ParentUntrusted("the parent's uids could not be read")


def _argv(pid: int, proc: Path = PROC) -> tuple[str, ...]:
    raw = (proc / str(pid) / "cmdline").read_bytes()
    return tuple(part.decode("utf-8", "surrogateescape") for part in raw.split(b"\0") if part)


def _same_file(a: str | Path, b: str | Path) -> bool:
    sa, sb = os.stat(a), os.stat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def runs_deskpilot(argv: tuple[str, ...], bin_dir: Path) -> bool:
    """Does this interpreter command line run deskpilot?

    Accepted: ``python [options] -m deskpilot[.module] ...`` and ``python [options]
    <bin_dir>/deskpilot ...`` (the console script of this environment). ``-c`` is refused.
    """
    i = 1
    while i < len(argv):
        token = argv[i]
        if token == "--":
            i += 1
            break
        if not token.startswith("-") or token == "-":
            break
        flags = token[1:]
        for j, ch in enumerate(flags):
            rest = flags[j + 1 :]
            if ch == "c":
                return False
            if ch == "m":
                module = rest or (argv[i + 1] if i + 1 < len(argv) else "")
                return module == DIST_NAME or module.startswith(DIST_NAME + ".")
            if ch in "WX":
                if not rest:
                    i += 1  # the option's argument is the next token
                break
        i += 1
    if i >= len(argv):
        return False
    script = Path(argv[i])
    if script.name != DIST_NAME:
        return False
    try:
        return _same_file(script.parent, bin_dir)
    except OSError:
        return False


def read_parent(pid: int, proc: Path = PROC) -> ParentInfo:
    return ParentInfo(
        pid=pid,
        start_time=_start_time(pid, proc),
        exe=os.readlink(proc / str(pid) / "exe"),
        argv=_argv(pid, proc),
    )


def verify_parent(proc: Path = PROC) -> ParentInfo:
    """Raise ParentUntrusted unless our parent is a deskpilot process of this user."""
    ppid = os.getppid()
    if ppid <= 1:
        raise ParentUntrusted("the host has no parent process (it was orphaned)")
    try:
        before = _start_time(ppid, proc)
        uids = _uids(ppid, proc)
        mine = {os.getuid(), os.geteuid()}
        if len(mine) != 1 or any(u not in mine for u in uids):
            raise ParentUntrusted("the parent runs as another user")
        info = read_parent(ppid, proc)
        if not _same_file(proc / str(ppid) / "exe", proc / "self" / "exe"):
            raise ParentUntrusted(
                f"the parent's executable ({info.exe}) is not this Python interpreter"
            )
        if not runs_deskpilot(info.argv, Path(sys.prefix) / "bin"):
            name = Path(info.argv[0]).name if info.argv else "?"
            raise ParentUntrusted(f"the parent ({name}) is not a deskpilot process")
        after = _start_time(ppid, proc)
    except (OSError, ValueError, IndexError) as exc:
        raise ParentUntrusted(f"the parent could not be inspected: {exc}") from None
    if before != after or info.start_time != before or os.getppid() != ppid:
        raise ParentUntrusted("the parent process changed during verification (pid reuse)")
    return info


def is_development_install() -> bool:
    """Editable install, or no installed distribution at all (a source tree)."""
    try:
        dist = metadata.distribution(DIST_NAME)
    except metadata.PackageNotFoundError:
        return True
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        info = json.loads(text).get("dir_info") or {}
    except (json.JSONDecodeError, AttributeError):
        return False
    return isinstance(info, dict) and info.get("editable") is True


def _refuse(reason: str) -> None:
    sys.stderr.write(f"deskpilot host: refusing to run: {reason}\n")
    sys.stderr.flush()
    raise SystemExit(EXIT_AUTH_FAILURE)


def authorize_parent() -> None:
    """Exit 77 unless the parent is verified (or development local trust applies)."""
    if os.environ.get(LOCAL_TRUST_ENV) == "1":
        if is_development_install():
            return
        _refuse(f"{LOCAL_TRUST_ENV}=1 is only honoured for a development (editable) install")
    try:
        verify_parent()
    except ParentUntrusted as exc:
        _refuse(str(exc))
