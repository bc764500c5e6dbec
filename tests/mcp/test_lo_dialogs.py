"""LibreOffice's dialogs, the issue's case, through the official TypeScript MCP SDK: a key that
opens a dialog (Writer's ctrl+h, Find and Replace; ctrl+k, Hyperlink) returns the dialog's
state — it was ``action_noop``, LibreOffice showing the dialog after the host's wait had
ended — and Close or Escape on the dialog's state returns the Writer window now in front —
it was ``target_not_found`` (runtime/window_changes.py, host/post_action.py "Late effects").
One Writer (GTK 3 VCL plugin, its own profile) for the module.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.a11y import list_accessible_apps
from deskpilot.desktop.apps import App, launch

pytestmark = pytest.mark.desktop

WRITER = 'Window=(title="Untitled 1 - LibreOffice Writer"'


def _office_pid(launched: int, timeout: float = 120.0) -> int:
    """The pid of the soffice.bin our ``soffice`` started, once it is on the AT-SPI bus: the
    wrapper forks it, and on a fresh profile the first soffice.bin restarts itself, so the
    app is found on the bus, as a process of our process group."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, pid in asyncio.run(list_accessible_apps()):
            if name.lower() == "soffice" and _group(pid) == launched:
                return pid
        time.sleep(0.3)
    raise AssertionError("LibreOffice did not appear on the AT-SPI bus")


def _group(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture(scope="module")
def writer(dp_desktop: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is not installed")
    profile = tmp_path_factory.mktemp("lo-profile")
    env = {**os.environ, "SAL_USE_VCLPLUGIN": "gtk3"}
    argv = [
        "soffice",
        f"-env:UserInstallation={profile.as_uri()}",
        "--norestore",
        "--nologo",
        "--writer",
    ]
    app: App = launch(argv, env)
    try:
        yield _office_pid(app.pid)
    finally:
        app.stop()


def _dialog(result: dict[str, Any], title: str) -> None:
    assert not result["isError"], result["text"]
    assert f'A dialog of this window opened: "{title}"' in result["text"], result["text"]
    assert f'Window=(title="{title}"' in result["text"], result["text"]
    d = result["diagnostic"]
    assert d["stateIdIssued"] and d.get("code") is None and not d.get("noop"), d


def _writer_again(result: dict[str, Any]) -> None:
    assert not result["isError"], result["text"]
    assert "closed. The window now in front of the app is" in result["text"], result["text"]
    assert WRITER in result["text"], result["text"]
    assert result["diagnostic"]["stateIdIssued"], result["diagnostic"]


async def test_a_key_opens_a_dialog_and_closing_it_gives_writer_back(writer: int) -> None:
    calls = [
        ("get_app_state", {"app": writer}),
        ("press_key", {"state_id": "$state", "keys": ["ctrl+h"]}),
        ("click", {"state_id": "$state", "element_id": '$element:button "Close"'}),
        ("press_key", {"state_id": "$state", "keys": ["ctrl+k"]}),
        ("press_key", {"state_id": "$state", "keys": ["Escape"]}),
    ]
    report = await run_ts_script(
        TS_CALLS,
        stdio_config(),
        json.dumps([{"name": name, "arguments": args} for name, args in calls]),
    )
    first, find, closed, link, escaped = report["results"]
    assert not first["isError"] and WRITER in first["text"], first["text"]
    assert "[focused]" in first["text"], first["text"]  # the document: keys have a place
    _dialog(find, "Find and Replace")
    _writer_again(closed)
    _dialog(link, "Hyperlink")
    _writer_again(escaped)
