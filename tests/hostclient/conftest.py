"""Fixtures for the host client: real host processes on the private desktop.

The dev venv is an editable install, so the host runs under the development override
(``DESKPILOT_HOST_LOCAL_TRUST=1``, as scripts/ set it); the strict path is tested against a
real wheel installed into a throwaway venv (``wheel_venv``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig

from . import wheelkit

HERE = Path(__file__).resolve().parent
FAULT_PROXY = HERE / "fault_proxy.py"


@pytest.fixture(autouse=True)
def _local_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCAL_TRUST_ENV, "1")
    monkeypatch.delenv("DESKPILOT_HOST_TEST_HANG", raising=False)


def fast_config(**overrides: object) -> HostConfig:
    """Production numbers, except the heartbeat is off unless a test turns it on."""
    base: dict[str, object] = {"heartbeat_interval_s": 3600.0}
    base.update(overrides)
    return HostConfig(**base)  # type: ignore[arg-type]


def proxy_config(faults: str, **overrides: object) -> HostConfig:
    """The real host behind a fault-injecting relay (see fault_proxy.py)."""
    env = dict(os.environ)
    env["DESKPILOT_TEST_FAULTS"] = faults
    return fast_config(argv=(sys.executable, str(FAULT_PROXY)), env=env, **overrides)


@pytest.fixture
async def backend(desktop: vdesk.DesktopState) -> AsyncIterator[HostBackend]:
    b = HostBackend(fast_config(), heartbeat=False)
    try:
        yield b
    finally:
        await b.close()


@contextlib.contextmanager
def running(argv: list[str]) -> Iterator[App]:
    app = launch(argv)
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def zenity_info(desktop: vdesk.DesktopState) -> Iterator[App]:
    zenity = shutil.which("zenity")
    if zenity is None:
        pytest.skip("zenity is not installed")
    with running([zenity, "--info", "--title", "hostclient test", "--text", "hello"]) as app:
        yield app


async def wait_window(backend: HostBackend, pid: int, timeout: float = 15.0) -> str:
    import asyncio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for w in await backend.list_windows():
            if w.app.pid == pid:
                return w.window_id
        await asyncio.sleep(0.1)
    raise AssertionError(f"no window for pid {pid}")


async def eventually(predicate: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` passes; returns its last value."""
    import asyncio

    for _ in range(max(1, int(timeout / step))):
        if predicate():
            return True
        await asyncio.sleep(step)
    return predicate()


def cmdline(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); look at its state
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return False


def kill9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def wheel_venv() -> Iterator[Path]:
    """A throwaway venv with a real wheel of the project installed by pip; yields its python."""
    root = Path(tempfile.mkdtemp(prefix="deskpilot-wheel-"))
    try:
        wheel = wheelkit.build_wheel(root / "dist")
        yield wheelkit.make_venv(root / "venv", wheel)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def strict_env(data_dir: Path) -> dict[str, str]:
    """The environment of a regular deployment: no override, own data dir."""
    env = {k: v for k, v in os.environ.items() if k != LOCAL_TRUST_ENV}
    env["DESKPILOT_DATA_DIR"] = str(data_dir)
    return env


def run(
    argv: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
