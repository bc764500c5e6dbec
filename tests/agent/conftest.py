"""Fixtures for the agent tests: a scripted decision model (a real loopback HTTP server), the
private desktop with real apps, and an agent built the way ``deskpilot agent`` builds it.

The scripted model server lives in tests/operator/scripted_model.py (one server for both
loops); that directory is put on the import path here, as pytest does for its own tests.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

from scripted_model import ScriptedModel

from deskpilot.agent.events import EventLog
from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.hostclient.config import LOCAL_TRUST_ENV

API_KEY = "sk-test-agent-0123456789abcdef"


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


@pytest.fixture(scope="session")
def dp_desktop(desktop: Any) -> Iterator[Any]:
    old = os.environ.get(LOCAL_TRUST_ENV)
    os.environ[LOCAL_TRUST_ENV] = "1"
    yield desktop
    if old is None:
        os.environ.pop(LOCAL_TRUST_ENV, None)
    else:
        os.environ[LOCAL_TRUST_ENV] = old


@pytest.fixture
async def calculator(dp_desktop: Any) -> AsyncIterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = await asyncio.to_thread(launch_accessible, ["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


@dataclass
class AgentRig:
    """An agent over a real runtime, as ``deskpilot agent`` assembles it, with its events."""

    agent: Any
    runtime: Any
    events: EventLog
    cwd: Path


async def make_rig(env: dict[str, str], cwd: Path, *, bounded: bool = True) -> AgentRig:
    from deskpilot.agent.factory import build_agent
    from deskpilot.runtime.agent_desktop import RuntimeDesktop
    from deskpilot.runtime.budget import BudgetMode
    from deskpilot.runtime.runtime import RuntimeConfig
    from deskpilot.runtime.wiring import build_runtime

    mode = BudgetMode.BOUNDED if bounded else BudgetMode.UNBOUNDED
    runtime = build_runtime(RuntimeConfig(budget_mode=mode))
    events = EventLog()
    agent = build_agent(
        RuntimeDesktop(runtime), cwd=cwd, sink=events, env={**os.environ, **env}, bounded=bounded
    )
    return AgentRig(agent, runtime, events, cwd)


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
