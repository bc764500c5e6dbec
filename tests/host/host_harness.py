"""Drive the real host process (``python -m deskpilot.host``) over its stdio frames.

A reader thread turns stdout into a queue of frames so every wait is bounded; stderr goes to a
temp file so a chatty host can never block on a full pipe, and tests can read it afterwards.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from deskpilot.desktop import apps
from deskpilot.protocol.frames import Frame, FrameError, FrameKind, FrameReader, encode_json
from deskpilot.protocol.wire import carries_binary

DEFAULT_TIMEOUT = 20.0


class HostProcess:
    def __init__(self, extra_env: dict[str, str] | None = None, *, trust: bool = True) -> None:
        env = dict(os.environ)
        env.pop("DESKPILOT_HOST_TEST_HANG", None)
        if trust:
            env["DESKPILOT_HOST_LOCAL_TRUST"] = "1"
        else:
            env.pop("DESKPILOT_HOST_LOCAL_TRUST", None)
        env.setdefault("DESKPILOT_HOST_LOG_LEVEL", "INFO")
        env.update(extra_env or {})
        self._stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 - lives as long as the host
            prefix="deskpilot-host-", suffix=".log"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deskpilot.host"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        self.frames: queue.Queue[Frame | BaseException | None] = queue.Queue()
        self._ids = itertools.count(1)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        reader = FrameReader(self.proc.stdout)
        while True:
            try:
                self.frames.put(reader.read())
            except FrameError as exc:
                self.frames.put(None if exc.reason == "eof" else exc)
                return
            except BaseException as exc:
                self.frames.put(exc)
                return

    # ---------------------------------------------------------------- io

    def write_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, request: dict[str, Any]) -> Any:
        if "id" not in request:
            request = {"id": next(self._ids), **request}
        self.write_raw(encode_json(request))
        return request["id"]

    def next_frame(self, timeout: float = DEFAULT_TIMEOUT) -> Frame:
        item = self.frames.get(timeout=timeout)
        if item is None:
            raise EOFError("the host closed stdout")
        if isinstance(item, BaseException):
            raise item
        return item

    def read_response(
        self, timeout: float = DEFAULT_TIMEOUT
    ) -> tuple[dict[str, Any], bytes | None]:
        frame = self.next_frame(timeout)
        assert frame.kind is FrameKind.JSON, "a binary frame arrived without its descriptor"
        response = frame.json()
        binary = None
        if carries_binary(response):
            image = self.next_frame(timeout)
            assert image.kind is FrameKind.BINARY, "the image frame must follow its descriptor"
            binary = bytes(image.payload)
        return response, binary

    def request(
        self, request: dict[str, Any], timeout: float = DEFAULT_TIMEOUT
    ) -> tuple[dict[str, Any], bytes | None]:
        rid = self.send(request)
        response, binary = self.read_response(timeout)
        assert response["id"] == rid, (response, rid)
        return response, binary

    def call(self, request: dict[str, Any], timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        return self.request(request, timeout)[0]

    # ---------------------------------------------------------------- lifecycle

    def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()

    def wait(self, timeout: float = 10.0) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr_text(self) -> str:
        return Path(self._stderr.name).read_text(errors="replace")

    def stop(self) -> None:
        self.close_stdin()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self._stderr.close()

    def __enter__(self) -> HostProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def observe(
    host: HostProcess, target: dict[str, Any], session: str = "s1", **extra: Any
) -> tuple[dict[str, Any], bytes | None]:
    response, png = host.request(
        {"type": "observe", "target": target, "sessionId": session, **extra}
    )
    assert response["type"] == "observation", response
    return response, png


def act(
    host: HostProcess,
    observation: dict[str, Any],
    action: dict[str, Any],
    session: str = "s1",
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Any]:
    return host.call(
        {
            "type": "execute_action",
            "sessionId": session,
            "frameId": observation["frameId"],
            "treeVersion": observation["treeVersion"],
            "action": action,
        },
        timeout,
    )


def element_id(tree: str, role: str, name: str) -> int:
    """The id of the first line ``- role "name"…[id]`` (ids are always last on the line)."""
    needle = f'{role} "{name}"'
    for line in tree.splitlines():
        if needle in line:
            return int(line.rsplit("[", 1)[1].rstrip("]"))
    raise AssertionError(f"no {needle} in the tree:\n{tree}")


def wait_for(predicate: Any, timeout: float = 10.0, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


def launch_accessible(argv: list[str], *, capture_stdout: bool = False) -> apps.App:
    """Start an app and wait until it is on the AT-SPI bus; one restart if it never shows.

    On a loaded machine the first GTK app on a fresh session bus can stall in its start-up
    D-Bus calls (portal/settings activation) far longer than usual; a second start is quick.
    """
    for attempt in range(2):
        app = apps.launch(argv, capture_stdout=capture_stdout)
        try:
            apps.wait_accessible(pid=app.pid, timeout=30 if attempt == 0 else 60)
            return app
        except TimeoutError:
            app.stop()
            if attempt:
                raise
    raise AssertionError("unreachable")


def line_id(tree: str, pattern: str) -> int:
    """The element id of the first tree line matching ``pattern`` (a regex)."""
    for line in tree.splitlines():
        if re.search(pattern, line):
            return int(line.rsplit("[", 1)[1].rstrip("]"))
    raise AssertionError(f"no line matches {pattern!r} in:\n{tree}")


def observe_until(
    host: HostProcess, target: dict[str, Any], pattern: str, session: str, timeout: float = 30
) -> dict[str, Any]:
    """Observe (no screenshot) until a tree line matches ``pattern``; the last tree is shown
    when it never does."""
    last: list[str] = []

    def look() -> dict[str, Any] | None:
        response = host.call(
            {"type": "observe", "target": target, "sessionId": session, "includeScreenshot": False}
        )
        if response["type"] == "observation" and re.search(pattern, response["tree"], re.M):
            return response
        last[:] = [str(response.get("tree") or response)]
        return None

    try:
        found: dict[str, Any] = wait_for(look, timeout=timeout, interval=0.2)
    except AssertionError:
        raise AssertionError(f"{pattern!r} never appeared; last tree:\n{last}") from None
    return found


def click(
    host: HostProcess, obs: dict[str, Any], element: int, session: str, count: int = 1
) -> dict[str, Any]:
    """A left click with ``observeAfter``: the result carries the settled window."""
    response, _ = host.request(
        {
            "type": "execute_action",
            "sessionId": session,
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": {"kind": "click", "elementId": element, "count": count},
            "observeAfter": True,
        }
    )
    assert response["type"] == "action_result", response
    return response
