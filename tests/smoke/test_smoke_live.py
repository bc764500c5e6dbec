"""The smoke suite against a real endpoint, when one is configured for it; skipped, saying so,
when not (the suite never calls a paid endpoint on its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LIVE = {
    "DESKPILOT_LIVE_BASE_URL": "DESKPILOT_PROVIDER_BASE_URL",
    "DESKPILOT_LIVE_MODEL": "DESKPILOT_PROVIDER_MODEL",
    "DESKPILOT_LIVE_API_KEY": "DESKPILOT_PROVIDER_API_KEY",
}


def test_the_quick_profile_passes_against_the_live_endpoint(tmp_path: Path) -> None:
    missing = [name for name in LIVE if not os.environ.get(name)]
    if missing:
        pytest.skip(f"no live endpoint for the smoke suite: set {', '.join(LIVE)}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKPILOT_PROVIDER_")}
    env.update({target: os.environ[source] for source, target in LIVE.items()})
    env["DESKPILOT_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "deskpilot", "smoke", "--profile", "quick", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    summary = json.loads(done.stdout)["summary"]
    assert done.returncode == 0, [r for r in summary["caseResults"] if not r["ok"]]
    assert summary["providerHealth"]["ok"] and summary["totals"]["passed"] == 2
