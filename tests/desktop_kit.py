"""Real apps on the private desktop, for tests: started and waited for on the AT-SPI bus,
ended however the test went; a page served on loopback and opened in Chromium or Firefox (a
site that records what its forms post); an app frozen with SIGSTOP.

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
import time
import urllib.parse
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
#: Debian's firefox-esr (scripts/lib/setup.sh installs it)
HAS_FIREFOX = bool(shutil.which("firefox-esr") or shutil.which("firefox"))
needs_firefox = pytest.mark.skipif(not HAS_FIREFOX, reason="firefox-esr is not installed")


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


class Site:
    """Pages served on loopback by a real HTTP server (``pages``: path → HTML, changeable
    while it runs; ``delays``: path → seconds the server takes to answer), which records
    every form posted to it, decoded, in ``posts``."""

    def __init__(self, pages: dict[str, str], delays: dict[str, float] | None = None) -> None:
        self.pages = dict(pages)
        self.delays = dict(delays or {})
        self.posts: list[dict[str, list[str]]] = []
        self.url = ""
        self._posted = threading.Condition()

    def wait_post(self, count: int = 1, timeout: float = 20.0) -> list[dict[str, list[str]]]:
        """The posts once there are ``count`` of them (AssertionError after ``timeout``)."""
        with self._posted:
            if not self._posted.wait_for(lambda: len(self.posts) >= count, timeout):
                raise AssertionError(f"{len(self.posts)} posts arrived, {count} expected")
            return list(self.posts)

    def _record(self, body: bytes) -> None:
        with self._posted:
            self.posts.append(urllib.parse.parse_qs(body.decode(), keep_blank_values=True))
            self._posted.notify_all()


@contextmanager
def site(pages: dict[str, str], delays: dict[str, float] | None = None) -> Iterator[Site]:
    """A :class:`Site` served on loopback for the ``with`` block; its URL is ``site.url``.
    A post answers with a page titled "Received"."""
    served_site = Site(pages, delays)

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, html: str) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            page = served_site.pages.get(path)
            if page is None:
                self.send_error(404)
                return
            time.sleep(served_site.delays.get(path, 0.0))  # a slow server, on its own thread
            self._send(page)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            served_site._record(self.rfile.read(length))
            self._send("<!doctype html><title>Received</title><p>Thank you</p>")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    served_site.url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        yield served_site
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def firefox_at(url: str) -> Iterator[apps.App]:
    """Firefox (a throwaway profile) showing ``url``, once it is on the AT-SPI bus; the test
    is skipped where Firefox is not installed."""
    if not HAS_FIREFOX:
        pytest.skip(needs_firefox.kwargs["reason"])
    app = apps.launch_firefox(url)
    try:
        apps.wait_accessible(pid=app.pid, timeout=90)
        yield app
    finally:
        app.stop()


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
