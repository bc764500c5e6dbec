"""Helpers for the dashboard's tests (conftest.py's fixtures use them).

* ``ui_server`` — ``python -m deskpilot ui --port 0`` as a subprocess on the session's data
  dir (the same one in-process kernels of the test use), its base URL and the one-time login
  link read from its stdout. Ended (SIGTERM, then SIGKILL) after the module.
* ``browser`` — Playwright driving Debian's Chromium (``executable_path``; Playwright never
  downloads a browser here), headless.
* ``logged_in`` — a fresh browser context that has spent the login link: a page on /live.
  A module gets one login per server, like a person does; tests needing a second login start
  their own server with :func:`start_ui`.
* ``shot(page, name)`` — a full-page screenshot kept under ``artifacts/web/`` (git-ignored).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "web"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOGIN_RE = re.compile(r"one-time login link[^:]*: (http://\S+/login\?token=\S+)")


#: how many of the server's last output lines are kept for a failing test's message
OUTPUT_LINES = 400


@dataclass
class UiServer:
    proc: subprocess.Popen[str]
    base_url: str
    login_url: str
    output: deque[str]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_ui(*args: str, env: dict[str, str] | None = None, timeout_s: float = 30.0) -> UiServer:
    """Start ``deskpilot ui`` and wait for its login link.

    Its output is read to the end by a thread for as long as it runs: a server whose pipe
    nobody reads blocks on its next log line once the pipe's buffer is full, and then answers
    no request at all (a test that ran long enough saw exactly that)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskpilot", "ui", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdout is not None
    stdout = proc.stdout
    lines: deque[str] = deque(maxlen=OUTPUT_LINES)
    login: list[str] = []
    seen = threading.Event()

    def drain() -> None:
        for line in stdout:
            lines.append(line)
            found = LOGIN_RE.search(line)
            if found and not login:
                login.append(found.group(1))
                seen.set()
        seen.set()  # the server ended: stop waiting

    threading.Thread(target=drain, name="ui-output", daemon=True).start()
    seen.wait(timeout_s)
    if login:
        url = login[0]
        return UiServer(proc, url.split("/login")[0], url, lines)
    proc.kill()
    raise AssertionError(f"deskpilot ui did not print its login link: {''.join(lines)}")


def shot(page: Any, name: str) -> Path:
    """Keep a screenshot of ``page`` as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
