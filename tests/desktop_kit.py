"""Real apps on the private desktop, for tests: started and waited for on the AT-SPI bus,
ended however the test went; a page served on loopback and opened in Chromium; an app frozen
with SIGSTOP.

Shared by the host tests of the read deadline, the no-effect wait and the window listing,
and the MCP tests of the wait bound (tests/ is on ``sys.path`` through its conftest.py). A
module's app fixture is one line::

    calculator = app_fixture("calculator", ["gnome-calculator"])
    web = page_fixture("web", "<!doctype html>…")
"""

from __future__ import annotations

import http.server
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from deskpilot.desktop import apps

#: a GTK 3 window (system python3 + gi) with a button that changes nothing, one that
#: relabels a label, and a spin button: tests/host/noop_gtk_app.py
GTK3_NOOP_APP = Path(__file__).resolve().parent / "host" / "noop_gtk_app.py"
GTK3_NOOP_ARGV = ["/usr/bin/python3", str(GTK3_NOOP_APP)]
#: a GTK 3 window whose effects come late (a dialog 700 ms after a click or a key), with an
#: entry of at most 5 characters: tests/host/late_gtk_app.py (``--no-a11y``: without a tree)
GTK3_LATE_APP = Path(__file__).resolve().parent / "host" / "late_gtk_app.py"
GTK3_LATE_ARGV = ["/usr/bin/python3", str(GTK3_LATE_APP)]

#: Debian's Chromium is here (CI installs it; a bare machine may not have it)
HAS_CHROMIUM = bool(shutil.which("chromium") or shutil.which("chromium-browser"))
#: the one skip for a test that needs Chromium
needs_chromium = pytest.mark.skipif(not HAS_CHROMIUM, reason="chromium is not installed")


@contextmanager
def running(argv: list[str], *, capture_stdout: bool = False) -> Iterator[apps.App]:
    """The app started and on the AT-SPI bus (one relaunch if it never shows); stopped on
    the way out."""
    app = apps.launch_accessible(argv, capture_stdout=capture_stdout)
    try:
        yield app
    finally:
        app.stop()


@contextmanager
def served(html: str) -> Iterator[str]:
    """``html`` served on loopback by a real HTTP server; its URL."""
    body = html.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def chromium_page(html: str) -> Iterator[apps.App]:
    """Chromium (accessibility on) showing ``html``, once it is on the AT-SPI bus; the test
    is skipped where Chromium is not installed."""
    if not HAS_CHROMIUM:
        pytest.skip(needs_chromium.kwargs["reason"])
    with served(html) as url:
        app = apps.launch_chromium(url)
        try:
            apps.wait_accessible(pid=app.pid, timeout=60)
            yield app
        finally:
            app.stop()


def app_fixture(
    name: str, argv: list[str], *, scope: Any = "module", desktop: str = "desktop"
) -> Callable[..., Iterator[apps.App]]:
    """A fixture ``name`` that runs ``argv`` on the private desktop (fixture ``desktop``;
    the MCP tests use ``dp_desktop``) for its scope."""
    return _fixture(name, scope, desktop, lambda: running(argv))


def page_fixture(
    name: str, html: str, *, scope: Any = "module", desktop: str = "desktop"
) -> Callable[..., Iterator[apps.App]]:
    """A fixture ``name`` that shows ``html`` in Chromium (see :func:`chromium_page`)."""
    return _fixture(name, scope, desktop, lambda: chromium_page(html))


def _fixture(
    name: str, scope: Any, desktop: str, start: Callable[[], AbstractContextManager[apps.App]]
) -> Callable[..., Iterator[apps.App]]:
    @pytest.fixture(scope=scope, name=name)
    def fixture(request: pytest.FixtureRequest) -> Iterator[apps.App]:
        request.getfixturevalue(desktop)
        with start() as app:
            yield app

    return fixture


class Stopped:
    """The process SIGSTOPped for the ``with`` block — what a debugger or a hung main loop
    does to its accessibility answers; SIGCONT on the way out, whatever happened."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __enter__(self) -> Stopped:
        os.kill(self.pid, signal.SIGSTOP)
        return self

    def __exit__(self, *exc: object) -> None:
        os.kill(self.pid, signal.SIGCONT)
