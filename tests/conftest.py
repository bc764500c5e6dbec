"""Shared fixtures: the private virtual desktop is started once per test session.

Tests that touch the desktop request ``desktop``; it exports DISPLAY and the private D-Bus
address into ``os.environ`` so subprocesses (the host, apps) inherit them. Every piece of
deskpilot state goes to a per-session temp data dir.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk


@pytest.fixture(scope="session", autouse=True)
def _isolated_data_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="deskpilot-test-data-"))
    old = os.environ.get("DESKPILOT_DATA_DIR")
    os.environ["DESKPILOT_DATA_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("DESKPILOT_DATA_DIR", None)
    else:
        os.environ["DESKPILOT_DATA_DIR"] = old


@pytest.fixture(scope="session")
def desktop() -> Iterator[vdesk.DesktopState]:
    state = vdesk.up(1280, 800)
    saved = {k: os.environ.get(k) for k in state.env}
    os.environ.update(state.env)
    try:
        yield state
    finally:
        vdesk.down(state)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def dp_desktop(desktop: vdesk.DesktopState) -> Iterator[vdesk.DesktopState]:
    """The private desktop with the host's development trust on (a test host is not an
    installed, signed one)."""
    from deskpilot.hostclient.config import LOCAL_TRUST_ENV

    old = os.environ.get(LOCAL_TRUST_ENV)
    os.environ[LOCAL_TRUST_ENV] = "1"
    yield desktop
    if old is None:
        os.environ.pop(LOCAL_TRUST_ENV, None)
    else:
        os.environ[LOCAL_TRUST_ENV] = old
