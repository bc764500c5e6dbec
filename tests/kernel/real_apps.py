"""Real GTK dialogs for the kernel tests that run over a real host (zenity, skipped when absent)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from deskpilot.desktop.apps import App, launch


def zenity(*args: str) -> Iterator[App]:
    """A zenity dialog for the length of a fixture; stopped afterwards."""
    path = shutil.which("zenity")
    if path is None:
        pytest.skip("zenity is not installed")
    app = launch([path, *args])
    try:
        yield app
    finally:
        app.stop()
