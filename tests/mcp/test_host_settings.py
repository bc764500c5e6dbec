"""A host setting that cannot be used, as an agent meets it through the official TypeScript
MCP SDK (what Claude Code and pi are built on): every call says the host refused to start and
names the variable — the same code each time, not a restart budget — and
``diagnose_native_host`` advises fixing the setting, not starting a desktop. The values are
not echoed to the agent (names only); the person's CLI shows them (docs/host.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

pytestmark = pytest.mark.desktop


async def test_a_bad_host_setting_is_named_on_every_call_and_by_the_diagnosis(
    dp_desktop: Any,
) -> None:
    config = stdio_config()
    config["env"] = {
        **config["env"],
        "DESKPILOT_TREE_DEADLINE_MS": "1.5s",
        "DESKPILOT_HOST_LOG_LEVEL": "verbose",
    }
    calls = [
        {"name": "get_app_state", "arguments": {}},
        {"name": "list_apps", "arguments": {}},
        {"name": "get_app_state", "arguments": {}},
        {"name": "diagnose_native_host", "arguments": {}},
    ]
    report = await run_ts_script(TS_CALLS, config, json.dumps(calls))
    *refused, diagnosis = report["results"]
    names = ["DESKPILOT_TREE_DEADLINE_MS", "DESKPILOT_HOST_LOG_LEVEL"]
    for result in refused:
        assert result["isError"], result
        diag = result["diagnostic"]
        assert diag["code"] == "environment_unavailable", diag
        assert diag["details"]["reason"] == "host_setting_invalid", diag
        assert diag["details"]["settings"] == names, diag
        assert (
            "refused to start: DESKPILOT_TREE_DEADLINE_MS, DESKPILOT_HOST_LOG_LEVEL"
            in (result["text"])
        ), result["text"]
        assert "retrying the call cannot help" in result["text"], result["text"]
        assert "1.5s" not in result["text"] and "verbose" not in result["text"]
    assert not diagnosis["isError"], diagnosis
    data, _ = json.JSONDecoder().raw_decode(diagnosis["text"])
    assert any(c.get("settings") == names for c in data["checks"]), data["checks"]
    (advice,) = data["advice"]
    assert "DESKPILOT_TREE_DEADLINE_MS, DESKPILOT_HOST_LOG_LEVEL" in advice, advice
    assert "deskpilot desktop up" not in advice, advice
