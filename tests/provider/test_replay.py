"""Replay fixtures of model outputs with expected verdicts, in-process and through the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from provider_helpers import CLI

from deskpilot.provider import evaluate, tools_from_json

FIXTURE = Path(__file__).parent / "fixtures" / "replay_cases.json"
DATA = json.loads(FIXTURE.read_text("utf-8"))
TOOLS = tools_from_json(DATA["tools"])
BY_NAME = {t.name: t for t in TOOLS}


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_replay_case(case: dict) -> None:
    selected = case["selected"] if case["selected"] is not None else list(BY_NAME)
    out = evaluate(case["raw"], selected=set(selected), tools=BY_NAME).to_json()
    assert out == case["expect"]


def test_replay_through_cli_jsonl(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(DATA["tools"]), "utf-8")
    lines = "\n".join(
        json.dumps({"raw": c["raw"], "selected": c["selected"]}, ensure_ascii=False)
        for c in DATA["cases"]
    )
    proc = subprocess.run(
        [str(CLI), "provider", "parse", "--tools", str(tools), "--jsonl"],
        input=lines.encode("utf-8"),
        capture_output=True,
        timeout=60,
        check=True,
    )
    got = [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]
    assert got == [c["expect"] for c in DATA["cases"]]
