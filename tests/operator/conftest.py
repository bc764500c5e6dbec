"""Fixtures for the operator tests: the scripted decision model, and the real apps it drives.

``scripted_model`` is a started :class:`scripted_model.ScriptedModel` (no policy: it answers a
final text until the test calls ``set_policy``); it is closed after the test, and a policy that
raised fails the test there. The app fixtures need the private desktop (``desktop`` from
tests/conftest.py) and start each app fresh for one test.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_model import ScriptedModel

from deskpilot.desktop.apps import App, launch_accessible

FORM_ARGV = ["--forms", "--title=Contact", "--add-entry=Name", "--add-entry=City"]


@pytest.fixture
def scripted_model() -> Iterator[ScriptedModel]:
    model = ScriptedModel().start()
    try:
        yield model
    finally:
        model.close()
    assert not model.errors, model.errors


def start_app(argv: list[str], *, capture_stdout: bool = False) -> App:
    """Launch and wait for the AT-SPI registration (desktop/apps.py: one relaunch)."""
    return launch_accessible(argv, capture_stdout=capture_stdout)


@pytest.fixture
async def runtime(dp_desktop: Any) -> AsyncIterator[Any]:
    """A deskpilot runtime over the real host (``await runtime.call(tool, args)``)."""
    from deskpilot.runtime.wiring import build_runtime

    rt = build_runtime()
    try:
        yield rt
    finally:
        await rt.close()


@pytest.fixture
async def zenity_form(dp_desktop: Any) -> AsyncIterator[App]:
    """``zenity --forms --title=Contact --add-entry=Name --add-entry=City``; its stdout is
    captured (``app.proc.communicate()`` reads ``Name|City`` after OK)."""
    path = shutil.which("zenity")
    if path is None:
        pytest.skip("zenity is not installed")
    app = await asyncio.to_thread(start_app, [path, *FORM_ARGV], capture_stdout=True)
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
async def calculator(dp_desktop: Any) -> AsyncIterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = await asyncio.to_thread(start_app, ["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def text_file() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="deskpilot-operator-"))
    path = d / "notes.txt"
    path.write_text("")
    try:
        yield path
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
async def mousepad(dp_desktop: Any, text_file: Path) -> AsyncIterator[App]:
    """mousepad opened on ``text_file`` (an existing, empty file)."""
    if shutil.which("mousepad") is None:
        pytest.skip("mousepad is not installed")
    app = await asyncio.to_thread(start_app, ["mousepad", str(text_file)])
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def decision_model(scripted_model: ScriptedModel, monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    """``scripted_model`` configured as deskpilot's decision model through the environment
    (read again at every start_task and resume)."""
    monkeypatch.setenv("DESKPILOT_PROVIDER_BASE_URL", scripted_model.base_url)
    monkeypatch.setenv("DESKPILOT_PROVIDER_MODEL", scripted_model.model_id)
    monkeypatch.setenv("DESKPILOT_PROVIDER_API_KEY", "sk-test-operator-0123456789")
    return scripted_model


@pytest.fixture
async def zenity_form_file(dp_desktop: Any, tmp_path: Path) -> AsyncIterator[tuple[App, Path]]:
    """The ``zenity_form`` dialog with its stdout redirected to a file (``exec``: the pid is
    zenity's own); the file holds ``Name|City`` once OK was pressed."""
    path = shutil.which("zenity")
    if path is None:
        pytest.skip("zenity is not installed")
    out = tmp_path / "form.txt"
    argv = " ".join(shlex.quote(a) for a in [path, *FORM_ARGV])
    script = f"exec {argv} > {shlex.quote(str(out))}"
    app = await asyncio.to_thread(start_app, ["sh", "-c", script])
    try:
        yield app, out
    finally:
        app.stop()


@pytest.fixture
async def more_apps(dp_desktop: Any) -> AsyncIterator[Callable[..., Awaitable[App]]]:
    """``await more_apps(argv, capture_stdout=False)`` starts one more app (as ``start_app``);
    every app started so is stopped after the test."""
    started: list[App] = []

    async def start(argv: list[str], *, capture_stdout: bool = False) -> App:
        app = await asyncio.to_thread(start_app, argv, capture_stdout=capture_stdout)
        started.append(app)
        return app

    try:
        yield start
    finally:
        for app in started:
            app.stop()
