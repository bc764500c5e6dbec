"""GNOME Text Editor 43 (GTK 4) through the official TypeScript MCP SDK (the app matrix's
Text Editor row).

Read: the file's text in the text view, the caret, none of the infobars and pages GTK 4.8
keeps in the tree while they are not on screen ("Could Not Open File", "Document Restored",
"Start or Open a Document"). Act: append a line (Ctrl+End, then ``type_text`` into the view
by element id), see the unsaved marker ("•" before the title), save with Ctrl+S; the marker
is gone and the file has the line.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop import apps

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        not shutil.which("gnome-text-editor"), reason="gnome-text-editor is not installed"
    ),
]

TEXT = "first line of todo\nsecond line\nthird line\n"
HIDDEN = ("Could Not Open File", "Document Restored", "Discard", "Start or Open a Document")
VIEW = '$element:textField = "first line of todo'


@pytest.fixture(scope="module")
def todo(dp_desktop: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """gnome-text-editor on a file of known text, with its own data dir (no restored drafts)."""
    root = tmp_path_factory.mktemp("text-editor")
    path = root / "todo.txt"
    path.write_text(TEXT)
    env = {**os.environ, "XDG_DATA_HOME": str(root / "data")}
    app = apps.launch(["gnome-text-editor", "--standalone", str(path)], env)
    try:
        apps.wait_accessible(pid=app.pid, timeout=60)
        yield path
    finally:
        app.stop()


def _config() -> dict[str, Any]:
    return {**stdio_config(), "textLimit": 20_000}


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], (result.get("text"), result.get("diagnostic"))
    text: str = result["text"]
    return text


def _view(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip().startswith("- textField = ")]
    assert len(lines) == 1, text
    return lines[0]


async def test_text_editor_shows_the_file_and_nothing_hidden(todo: Path) -> None:
    report = await run_ts_script(
        TS_CALLS,
        _config(),
        json.dumps([{"name": "get_app_state", "arguments": {"app": "gnome-text-editor"}}]),
    )
    text = _ok(report["results"][0])
    # (GtkSourceView keeps the file's last newline out of its buffer)
    assert '- textField = "first line of todo\\nsecond line\\nthird line" ' in _view(text), text
    for hidden in HIDDEN:
        assert hidden not in text, text
    assert 'label "todo.txt"' in text and 'label "•"' not in text, text
    assert re.search(r'^Window=\(title="todo\.txt \(.*\) - Text Editor"', text, re.M), text


async def test_append_a_line_and_save(todo: Path) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": "gnome-text-editor"}},
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["ctrl+End"]}},
        {
            "name": "type_text",
            "arguments": {"state_id": "$state", "element_id": VIEW, "text": "\nfourth line"},
        },
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["ctrl+s"]}},
    ]
    report = await run_ts_script(TS_CALLS, _config(), json.dumps(calls))
    _state, end, typed, saved = report["results"]
    caret = len(TEXT) - 1  # the end of the buffer (its last newline is not in it)
    assert f"[caret {caret}]" in _view(_ok(end)), end["text"]
    after = _ok(typed)
    assert "third line\\nfourth line" in _view(after), after
    assert f"[caret {caret + len(chr(10) + 'fourth line')}]" in _view(after), after
    assert 'label "•"' in after, after  # unsaved changes: the title bar's marker
    assert 'label "•"' not in _ok(saved), saved["text"]
    assert saved["diagnostic"]["effect"] == "confirmed", saved["diagnostic"]  # the file
    assert await asyncio.to_thread(_saved, todo) == TEXT + "fourth line\n"


def _saved(path: Path, timeout: float = 20) -> str:
    """The file once it holds the new line (the save is written after the key returns)."""
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text()
        if "fourth line" in text:
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.1)  # a poll for the file, in a worker thread
