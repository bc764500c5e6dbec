"""An app that stops answering, through the official TypeScript MCP SDK (what Claude Code and
pi are built on): the agent gets its last tree, marked stale with its age, within one read
deadline the first time and ≈ 0.2 s after that; element ids of that state are refused, an
element of an earlier state is refused without spending it, a key pressed meanwhile is not
called a no-op, and the app is read now again once it runs (the key delivered). The script
is tests/clients/ts_frozen.mjs; it stops the app itself (SIGSTOP) between its calls.
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

    # an element of the state from before the stop: the app cannot be asked where it is now;
    # said as such, not counted as healed, and the state is not spent
    refused = report["clickFresh"]
    assert refused is not None and refused["isError"], refused
    diag = refused["diagnostic"]
    assert diag["code"] == "tree_partial" and diag["actionOutcome"] == "not_dispatched", diag
    assert diag["details"]["reason"] == "app_not_answering" and "healed" not in diag, diag
    assert "The app is not answering" in refused["text"], refused["text"]
    assert "the last tree it gave is" in refused["text"], refused["text"]

    # a key pressed into the stopped app waits in the X server: the result does not call it
    # a no-op (the same tree and a frozen screenshot prove nothing) and says not to repeat it
    key = report["key"]
    assert key is not None and not key["isError"], key["text"]
    assert key["diagnostic"].get("code") != "action_noop", key["diagnostic"]
    assert key["diagnostic"]["appUnresponsiveMs"] >= 300, key["diagnostic"]
    assert "did not answer after the action" in key["text"], key["text"]
    assert "do not repeat" in key["text"], key["text"]

    assert not back["isError"] and back["stale"] is None and not back["unavailable"], back
    # the key arrived once the app ran again: its text is "x" now
    assert back["treeVersion"] != fresh["treeVersion"], back["text"]
    assert '"x"' in back["text"], back["text"]
    # the state the refusal gave back is usable again: it is checked against the new tree
    # (where its text field, "" then, now holds "x": that element is gone, said as such)
    after = report["clickFreshAfter"]
    assert after is not None, report
    assert after["diagnostic"].get("code") in (None, "stale_tree"), after["text"]
    assert after["diagnostic"]["healed"] == 1, after["diagnostic"]
