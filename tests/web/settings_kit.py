"""Helpers for the settings tests (tests/web/test_settings.py, test_remote.py and
tests/kernel/test_settings_readers.py): a real ``deskpilot serve --transport http`` process,
an MCP client (the official SDK's) driven from a background thread with its own event loop —
Playwright's sync API owns the test's thread —, the dashboard over plain HTTP, and typing on
the private desktop through XTEST like a keyboard would.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import httpx

from serve_kit import HttpServer

from .uikit import UiServer


class McpThread:
    """One MCP client session over Streamable HTTP, on a loop in a background thread;
    :meth:`call` is synchronous so browser tests can use it between Playwright calls."""

    def __init__(self, serve: HttpServer) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._stack: Any = None
        self.client: Any = self._run(self._open(serve))

    def _run(self, coro: Any, timeout: float = 120.0) -> Any:
        future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout)

    async def _open(self, serve: HttpServer) -> Any:
        from contextlib import AsyncExitStack

        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        from mcp import Client

        stack = AsyncExitStack()
        http = await stack.enter_async_context(
            create_mcp_http_client(headers={"authorization": f"Bearer {serve.token}"})
        )
        client = await stack.enter_async_context(
            Client(streamable_http_client(serve.url, http_client=http))
        )
        self._stack = stack
        return client

    def call(self, tool: str, args: dict[str, Any], timeout: float = 120.0) -> Any:
        return self._run(self.client.call_tool(tool, args), timeout)

    def submit(self, tool: str, args: dict[str, Any]) -> concurrent.futures.Future[Any]:
        """Start a call that will wait (a confirmation, a long action); ``.result()`` later."""
        return asyncio.run_coroutine_threadsafe(self.client.call_tool(tool, args), self._loop)

    def close(self) -> None:
        if self._stack is not None:
            with suppress(Exception):  # the server may be gone already
                self._run(self._stack.aclose(), 30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@contextmanager
def mcp_client(serve: HttpServer) -> Iterator[McpThread]:
    client = McpThread(serve)
    try:
        yield client
    finally:
        client.close()


# ---------------------------------------------------------------------- reading results


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def state_id_of(result: Any) -> str:
    m = re.search(r"^state_id=(\S+)$", text_of(result), re.M)
    assert m, text_of(result)[:2000]
    return m.group(1)


def element_id(result: Any, pattern: str) -> int:
    found = [
        int(m.group(1))
        for line in text_of(result).splitlines()
        if re.search(pattern, line) and (m := re.search(r"\[(\d+)\]\s*$", line))
    ]
    assert len(found) == 1, (pattern, found, text_of(result)[:3000])
    return found[0]


def diag_of(result: Any) -> dict[str, Any]:
    """The result's diagnostic object (every tool result carries one)."""
    from deskpilot.runtime.diagnostics import parse_diagnostic

    d = parse_diagnostic(text_of(result))
    assert d is not None, text_of(result)[:2000]
    return d


def error_code(result: Any) -> str | None:
    """The deskpilot error code of a failed tool result, else None."""
    return str(diag_of(result).get("code")) if result.is_error else None


def until(predicate: Callable[[], object], timeout: float = 5.0, step: float = 0.05) -> float:
    """Wait for ``predicate``; returns the seconds it took (AssertionError on timeout)."""
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("condition not reached in time")
        time.sleep(step)
    return time.monotonic() - t0


# ---------------------------------------------------------------------- the dashboard by HTTP


@dataclass
class Dashboard:
    """A logged-in HTTP client of a ``deskpilot ui`` (for tests that need no browser)."""

    http: httpx.Client
    csrf: str
    origin: str

    def save(self, **fields: str | list[str]) -> httpx.Response:
        return self.http.post(
            "/settings", data={"csrf": self.csrf, **fields}, headers={"Origin": self.origin}
        )


def dashboard(server: UiServer) -> Dashboard:
    http = httpx.Client(base_url=server.base_url, follow_redirects=False, timeout=15)
    assert http.get(server.login_url.replace(server.base_url, "")).status_code == 303
    page = http.get("/settings")
    assert page.status_code == 200, page.text[:500]
    m = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert m
    return Dashboard(http, m.group(1), server.base_url)


# ---------------------------------------------------------------------- the keyboard


def xtest_type(display_name: str, text: str, *, into_window_of_pid: int | None = None) -> None:
    """Type ``text`` (letters and digits) through XTEST; with ``into_window_of_pid`` the
    pointer is first moved over that process's top-level window (no window manager runs on
    the private desktop, so the keyboard follows the pointer)."""
    from Xlib import XK, X, display
    from Xlib.ext import xtest

    d = display.Display(display_name)
    try:
        if into_window_of_pid is not None:
            x, y = _window_centre(d, into_window_of_pid)
            xtest.fake_input(d, X.MotionNotify, x=x, y=y)
            d.sync()
            time.sleep(0.2)
        for ch in text:
            code = d.keysym_to_keycode(XK.string_to_keysym(ch))
            xtest.fake_input(d, X.KeyPress, code)
            xtest.fake_input(d, X.KeyRelease, code)
            d.sync()
            time.sleep(0.02)
    finally:
        d.close()


def xtest_chord(display_name: str, *keysyms: str) -> None:
    """Press and release a chord through XTEST, as a keyboard would."""
    from Xlib import XK, X, display
    from Xlib.ext import xtest

    d = display.Display(display_name)
    try:
        codes = [d.keysym_to_keycode(XK.string_to_keysym(k)) for k in keysyms]
        for c in codes:
            xtest.fake_input(d, X.KeyPress, c)
        d.sync()
        time.sleep(0.05)
        for c in reversed(codes):
            xtest.fake_input(d, X.KeyRelease, c)
        d.sync()
    finally:
        d.close()


def _window_centre(d: Any, pid: int) -> tuple[int, int]:
    pid_atom = d.intern_atom("_NET_WM_PID")
    root = d.screen().root
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for win in root.query_tree().children:
            prop = win.get_full_property(pid_atom, 0)
            if prop is None or not prop.value or int(prop.value[0]) != pid:
                continue
            attrs = win.get_attributes()
            if attrs.map_state != 2:  # IsViewable
                continue
            g = win.get_geometry()
            pos = win.translate_coords(root, 0, 0)
            return (-pos.x + g.width // 2, -pos.y + g.height // 2)
        time.sleep(0.1)
    raise AssertionError(f"no mapped window of pid {pid}")
