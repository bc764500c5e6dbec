"""Shared fixtures: the private virtual desktop is started once per test session.

Tests that touch the desktop request ``desktop``; it exports DISPLAY and the private D-Bus
address into ``os.environ`` so subprocesses (the host, apps) inherit them. Every piece of
deskpilot state goes to a per-session temp data dir.

``scripts/test`` runs the suite on several pytest-xdist workers, each a session of its own:
each starts its own desktop (Xvfb picks a free display) the first time one of its tests
needs it, and never when none does. Settings the desktop's session services keep (xfconf,
dconf) go to a directory of that desktop, so one worker's Thunar view or calculator mode
never reaches another worker's apps, nor the person's own. Whole modules go to one worker
(``--dist loadfile``): a module's host and its heavy app (LibreOffice, Firefox, GIMP) start
once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk

#: the fixtures that bring up the private desktop: a test whose fixtures need one of them is
#: marked ``desktop`` by that alone (``scripts/test --quick`` runs ``-m "not desktop"``)
DESKTOP_FIXTURES = frozenset({"desktop", "dp_desktop"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by mark
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``desktop`` every test that needs the desktop through its fixtures (the mark
    written by hand is kept for tests that start a desktop themselves), then put the desktop
    modules first: with whole modules given out to workers in collection order, the long
    ones start early and the quick ones fill the gaps at the end."""
    desktop_modules: set[str] = set()
    for item in items:
        if DESKTOP_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.desktop)
        if item.get_closest_marker("desktop") is not None:
            desktop_modules.add(item.nodeid.split("::", 1)[0])
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in desktop_modules)


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


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` for the ``with`` block, as it was afterwards."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def desktop() -> Iterator[vdesk.DesktopState]:
    # The desktop's D-Bus session starts the services apps keep settings in (xfconfd for
    # Thunar, dconf for GTK apps) with its own environment: these directories, not the
    # person's ~/.config, shared by every desktop of the user (Thunar's last view leaked
    # from one worker's test into another's, tests/FLAKES.md)
    home = Path(tempfile.mkdtemp(prefix="deskpilot-test-desktop-"))
    xdg = {f"XDG_{kind.upper()}_HOME": str(home / kind) for kind in ("config", "data", "cache")}
    with _environ(xdg):
        state = vdesk.up(1280, 800)
    try:
        with _environ(state.env):
            yield state
    finally:
        vdesk.down(state)
        shutil.rmtree(home, ignore_errors=True)


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
