"""The host's settings from its environment: one reading of each, checked when it starts.

A person tunes the host with a few ``DESKPILOT_*`` variables. A value the host cannot use
used to fall back without a word (a tree deadline of ``1.5s`` or ``0`` read as the default,
a log level of ``verbose`` a crash with a traceback), so whoever set it could not tell it did
nothing. Now the host refuses to start: each bad setting is one stderr line
(``SETTING_LINE`` + the variable, its value and what it takes) and the exit status is
``EXIT_CONFIG``; the host client turns that into ``environment_unavailable`` with those
sentences (``hostclient/failures.py``). Unset or empty means the default. A deadline above
the cap is used at the cap (a read's deadline is never above the host client's request
timeout: docs/host-tree.md), and the host log says so at start (``notices``).

The readers below are the one place each variable is parsed; the host's parts call them
(a process that skipped the start check, a test say, gets the same ``SettingError``).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Mapping
from typing import Final

from deskpilot.protocol.wire import MAX_TREE_DEADLINE_MS

TREE_DEADLINE_ENV: Final = "DESKPILOT_TREE_DEADLINE_MS"
TREE_CACHE_ENV: Final = "DESKPILOT_TREE_CACHE"
LOG_LEVEL_ENV: Final = "DESKPILOT_HOST_LOG_LEVEL"

#: the tree read's deadline when none is set (docs/host-tree.md, "A deadline on every read")
TREE_DEADLINE_S: Final = 1.5
DEFAULT_LOG_LEVEL: Final = "WARNING"
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_ON: Final = frozenset({"1", "on", "true", "yes"})
_OFF: Final = frozenset({"0", "off", "false", "no"})
#: most characters of a bad value repeated in the error (a value is not a secret, but a
#: pasted paragraph need not come back whole)
_SHOWN: Final = 40


class SettingError(ValueError):
    """A setting's value the host cannot use; the message names the variable and the fix."""


def _raw(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name, "").strip()


def _shown(raw: str) -> str:
    return raw if len(raw) <= _SHOWN else raw[:_SHOWN] + "…"


def _bad(name: str, raw: str, takes: str) -> SettingError:
    return SettingError(f"{name}={_shown(raw)!r} cannot be used: it takes {takes}")


def _deadline_ms(environ: Mapping[str, str]) -> float | None:
    raw = _raw(environ, TREE_DEADLINE_ENV)
    if not raw:
        return None
    try:
        ms = float(raw)
    except ValueError:
        ms = math.nan
    if not (ms >= 1 and math.isfinite(ms)):  # also NaN; inf is no number of ms either
        raise _bad(TREE_DEADLINE_ENV, raw, "a number of milliseconds of at least 1, like 1500")
    return ms


def tree_deadline_s(environ: Mapping[str, str] = os.environ) -> float:
    """The tree read's deadline in seconds: ``DESKPILOT_TREE_DEADLINE_MS`` (a number of
    milliseconds, at least 1; above ``MAX_TREE_DEADLINE_MS`` it is that cap, said once in
    the host log at start and by every observation's ``treeRead.deadlineMs``), else
    ``TREE_DEADLINE_S``."""
    ms = _deadline_ms(environ)
    if ms is None:
        return TREE_DEADLINE_S
    return min(ms, MAX_TREE_DEADLINE_MS) / 1000


def notices(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Settings the host uses other than as written (a deadline above the cap), one
    sentence each, for the host log at start."""
    with contextlib.suppress(SettingError):
        ms = _deadline_ms(environ)
        if ms is not None and ms > MAX_TREE_DEADLINE_MS:
            return [
                f"{TREE_DEADLINE_ENV}={_shown(_raw(environ, TREE_DEADLINE_ENV))!r} is above "
                f"the cap: tree reads use {MAX_TREE_DEADLINE_MS:,} ms (two reads of an action "
                "must fit in the host client's request timeout)"
            ]
    return []


def tree_cache_on(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the event-driven tree cache serves reads (``DESKPILOT_TREE_CACHE``: on by
    default; ``0``/``off`` turns it off, for diagnosis)."""
    raw = _raw(environ, TREE_CACHE_ENV)
    if not raw or raw.lower() in _ON:
        return True
    if raw.lower() in _OFF:
        return False
    raise _bad(TREE_CACHE_ENV, raw, "1/on/true/yes or 0/off/false/no")


def log_level(environ: Mapping[str, str] = os.environ) -> str:
    """The host log's level (``DESKPILOT_HOST_LOG_LEVEL``, ``WARNING`` by default)."""
    raw = _raw(environ, LOG_LEVEL_ENV)
    if not raw:
        return DEFAULT_LOG_LEVEL
    if raw.upper() not in LOG_LEVELS:
        raise _bad(LOG_LEVEL_ENV, raw, "one of " + ", ".join(LOG_LEVELS))
    return raw.upper()


_READERS: Final[tuple[Callable[[Mapping[str, str]], object], ...]] = (
    tree_deadline_s,
    tree_cache_on,
    log_level,
)


def problems(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Every setting in ``environ`` the host cannot use, one sentence each (empty: all
    fine). All are reported at once, so a person fixes them in one go."""
    out: list[str] = []
    for read in _READERS:
        try:
            read(environ)
        except SettingError as exc:
            out.append(str(exc))
    return out
