"""Every smoke case and the profiles that name groups of them: what ``--case`` and
``--profile`` choose from, and what ``--list-cases`` prints.

``--case`` and ``--profile`` combine: the result is the cases in the order they were named,
each once. Without either the run is the full suite (the twelve cases of seed 004's suite,
translated). ``desktop`` cases run on a private desktop the runner brings up.
"""

from __future__ import annotations

from collections.abc import Sequence

from deskpilot.smoke.case_model import Case
from deskpilot.smoke.desktop_cases import DESKTOP_CASES
from deskpilot.smoke.local_cases import EXTRA_CASES, LOCAL_CASES
from deskpilot.smoke.schema import FULL_SUITE_CASES

ALL_CASES: tuple[Case, ...] = (*LOCAL_CASES, *EXTRA_CASES, *DESKTOP_CASES)
BY_NAME = {c.name: c for c in ALL_CASES}

PROFILES: dict[str, tuple[str, ...]] = {
    #: is the endpoint there and does a cwd-relative read work
    "quick": ("no-tool", "read"),
    "full-suite": tuple(c.name for c in LOCAL_CASES),
    "desktop": tuple(c.name for c in DESKTOP_CASES),
    #: read-only tools beyond the core: a long file read in parts, a status lookup that
    #: must answer "not found"
    "extension-low-risk": tuple(c.name for c in EXTRA_CASES),
}
DEFAULT_PROFILE = "full-suite"

if PROFILES["full-suite"] != FULL_SUITE_CASES:  # the summary reader's profiles expect these
    raise RuntimeError("schema.FULL_SUITE_CASES is out of date with local_cases.LOCAL_CASES")


class SelectionError(ValueError):
    """An unknown case or profile name (the message lists the known ones)."""


def full_suite_names() -> tuple[str, ...]:
    return PROFILES["full-suite"]


def select(profiles: Sequence[str], cases: Sequence[str]) -> list[Case]:
    """The cases asked for, in order, each once; the full suite when nothing was asked."""
    names: list[str] = []
    for profile in profiles:
        if profile not in PROFILES:
            raise SelectionError(f"unknown profile {profile!r}; profiles: {', '.join(PROFILES)}")
        names += PROFILES[profile]
    for name in cases:
        if name not in BY_NAME:
            raise SelectionError(
                f"unknown case {name!r}; cases: {', '.join(BY_NAME)} (see --list-cases)"
            )
        names.append(name)
    if not profiles and not cases:
        names = list(PROFILES[DEFAULT_PROFILE])
    return [BY_NAME[n] for n in dict.fromkeys(names)]


def profiles_of(name: str) -> list[str]:
    return [p for p, members in PROFILES.items() if name in members]
