"""Fixtures for the agent tests: a scripted decision model (a real loopback HTTP server), the
private desktop with real apps, and an agent built the way ``deskpilot agent`` builds it.

The scripted model server lives in tests/operator/scripted_model.py (one server for both
loops); that directory is put on the import path here, as pytest does for its own tests.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

from agent_rig import API_KEY, AgentRig, make_rig
from scripted_model import ScriptedModel

from deskpilot.desktop.apps import App, launch_accessible


@pytest.fixture
def scripted_model() -> Iterator[ScriptedModel]:
    model = ScriptedModel(model_id="scripted-agent").start()
    try:
        yield model
    finally:
        model.close()
    assert not model.errors, model.errors


@pytest.fixture
def model_env(scripted_model: ScriptedModel, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The scripted model as the configured decision model (environment, as automation sets it)."""
    env = {
        "DESKPILOT_PROVIDER_BASE_URL": scripted_model.base_url,
        "DESKPILOT_PROVIDER_MODEL": scripted_model.model_id,
        "DESKPILOT_PROVIDER_API_KEY": API_KEY,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DESKPILOT_VISION_BASE_URL", raising=False)
    monkeypatch.delenv("DESKPILOT_VISION_MODEL", raising=False)
    return env


@pytest.fixture
async def calculator(dp_desktop: Any) -> AsyncIterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = await asyncio.to_thread(launch_accessible, ["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
async def rig(model_env: dict[str, str], tmp_path: Path) -> AsyncIterator[AgentRig]:
    """An agent whose working directory is a fresh temporary directory (no desktop needed
    until a desktop tool is called)."""
    work = tmp_path / "work"
    work.mkdir()
    r = await make_rig(model_env, work)
    try:
        yield r
    finally:
        await r.agent.model.aclose()
        await r.runtime.close()


@pytest.fixture
async def desktop_rig(dp_desktop: Any, rig: AgentRig) -> AgentRig:
    return rig
