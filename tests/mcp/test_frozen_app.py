"""An app that stops answering, through the official TypeScript MCP SDK (what Claude Code and
pi are built on): the agent gets its last tree, marked stale with its age, within one read
deadline the first time and ≈ 0.2 s after that; element ids of that state are refused, and
the app is read now again once it runs. The script is tests/clients/ts_frozen.mjs; it stops
the app itself (SIGSTOP) between its calls.
"""

from __future__ import annotations

from typing import Any

import pytest
from real_clients import TS_FROZEN, run_ts_script, stdio_config

from deskpilot.desktop.apps import App
from deskpilot.host.accessibility import SILENT_PROBE_S, TREE_DEADLINE_S
from desktop_kit import app_fixture

pytestmark = pytest.mark.desktop

#: what a get_app_state adds to its host reads (listing, screenshot, formatting) on a busy
#: machine; measured ≈ 0.1 s here
SLACK_S = 0.8

editor = app_fixture("editor", ["mousepad"], scope="function", desktop="dp_desktop")


async def test_a_stopped_app_is_its_last_tree_marked_stale_and_quick_to_look_at_again(
    editor: App, dp_desktop: Any
) -> None:
    report = await run_ts_script(TS_FROZEN, stdio_config(), str(editor.pid))
    fresh, looks, click, back = report["fresh"], report["looks"], report["click"], report["back"]
    assert not fresh["isError"] and fresh["stale"] is None and fresh["stateId"], fresh["text"]
    assert "textField" in fresh["text"], fresh["text"]

    ages = [int(look["stale"]) for look in looks if look["stale"] is not None]
    assert len(ages) == len(looks) == 3, looks
    assert ages[0] >= 300 and ages == sorted(ages), ages
    for look in looks:
        assert not look["isError"] and not look["unavailable"], look["text"]
        assert look["treeVersion"] == fresh["treeVersion"], (look["text"], fresh["text"])
    # the first look waits out one deadline (the listing's question and the read share it)
    assert looks[0]["ms"] < (TREE_DEADLINE_S + SLACK_S) * 1000, looks[0]["ms"]
    # the app has had its deadline: the next looks wait only the probe
    for look in looks[1:]:
        assert look["ms"] < (SILENT_PROBE_S + SLACK_S) * 1000, [lk["ms"] for lk in looks]

    assert click is not None and click["isError"], click
    assert "tree_partial" in click["text"] or "observe again" in click["text"], click["text"]

    assert not back["isError"] and back["stale"] is None and not back["unavailable"], back
    assert back["treeVersion"] == fresh["treeVersion"], back["text"]
