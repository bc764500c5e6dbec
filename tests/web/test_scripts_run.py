"""``scripts/run`` with no display opens onto the dashboard: it starts a private desktop, the
sample app, MCP over Streamable HTTP and ``deskpilot ui`` in the same environment and data dir,
prints one block with both URLs, and on Ctrl-C (SIGINT) ends everything it started.

Run the way CI would (stdin not a terminal) with the opt-in ``DESKPILOT_RUN_SERVE=1``, on a
throwaway data dir, with ports the system picks (the machine is shared). Every process of the
run is found by a marker in its environment (the desktop's daemons, the app and what D-Bus
activated for it are not children of the script) and must be gone after the interrupt."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run"
MARK = "DESKPILOT_RUN_TEST_MARK"
#: what a display-less environment must not have (a test session may have exported its own)
DESKTOP_VARS = ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "WAYLAND_DISPLAY")


@dataclass
class Run:
    proc: subprocess.Popen[str]
    mark: str
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout_s: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text(), re.M)
            if found:
                return found
            if self.proc.poll() is not None:
                time.sleep(0.2)  # the reader may still be draining the last lines
                found = re.search(pattern, self.text(), re.M)
                if found:
                    return found
                break
            time.sleep(0.2)
        raise AssertionError(f"scripts/run never printed {pattern!r}:\n{self.text()[-4000:]}")


def _env(data_dir: Path, mark: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DESKTOP_VARS}
    env.update(
        DESKPILOT_DATA_DIR=str(data_dir),
        DESKPILOT_RUN_SERVE="1",
        DESKPILOT_MCP_PORT="0",
        DESKPILOT_UI_PORT="0",
        **{MARK: mark},
    )
    env.update(extra)
    return env


def _start(env: dict[str, str]) -> Run:
    proc = subprocess.Popen(
        ["bash", str(SCRIPT)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C must reach the script as it does from a terminal (a signal ignored when a
        # shell starts cannot be trapped by it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    run = Run(proc, env[MARK])

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            run.lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    return run


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # exited, waiting to be reaped: gone for our purpose
        return None
    return fields[19]


def _marked(mark: str, root: int | None = None) -> dict[int, str]:
    """pid -> start time of every live process whose environment carries ``mark``, and of
    every descendant of ``root`` (a child may have been given a trimmed environment)."""
    found: dict[int, str] = {}
    parents: dict[int, int] = {}
    needle = f"{MARK}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            environ = (entry / "environ").read_bytes()
            parents[pid] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if needle in environ.split(b"\0"):
            started = _start_time(pid)
            if started is not None:
                found[pid] = started
    if root is not None:
        tree, grew = {root}, True
        while grew:
            more = {pid for pid, parent in parents.items() if parent in tree} - tree
            tree |= more
            grew = bool(more)
        for pid in tree - {root}:
            started = _start_time(pid)
            if started is not None:
                found[pid] = started
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def _still_there(pids: dict[int, str]) -> dict[int, str]:
    return {pid: _cmdline(pid) for pid, start in pids.items() if _start_time(pid) == start}


def _stop(run: Run, pids: dict[int, str]) -> None:
    """Teardown after a failure: the script's own clean-up first, then what it left."""
    if run.proc.poll() is None:
        run.proc.send_signal(signal.SIGTERM)
        try:
            run.proc.wait(60)
        except subprocess.TimeoutExpired:
            run.proc.kill()
            run.proc.wait(10)
    for pid in _still_there({**pids, **_marked(run.mark, run.proc.pid)}):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Run, dict[int, str]]]:
    mark = uuid.uuid4().hex
    run = _start(_env(tmp_path / "data", mark))
    seen: dict[int, str] = {}
    try:
        yield run, seen
    finally:
        _stop(run, seen)


async def _mcp_initialize(url: str, token: str) -> tuple[str, int]:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("list_apps", {})
        text = "".join(getattr(part, "text", "") for part in result.content)
        return text, len(tools)


@pytest.mark.desktop
def test_scripts_run_serves_both_and_ends_everything_on_ctrl_c(
    served: tuple[Run, dict[int, str]], tmp_path: Path
) -> None:
    run, seen = served
    started = time.monotonic()
    mcp_url = run.wait_for(r"MCP over Streamable HTTP: (http://127\.0\.0\.1:\d+/mcp)$", 240)[1]
    token = run.wait_for(r"export DESKPILOT_TOKEN=(\S+)$", 10)[1]
    dashboard = run.wait_for(r"Dashboard: (http://127\.0\.0\.1:\d+)$", 10)[1]
    login = run.wait_for(r"^\s+(http://127\.0\.0\.1:\d+/login\?token=\S+)$", 10)[1]
    ready_s = time.monotonic() - started
    out = run.text()
    # doctor and the observation of the sample app came first, then the block
    assert "gnome-calculator" in out.split("MCP over Streamable HTTP")[0]
    assert login.startswith(dashboard + "/login?token=")
    # the token is shown once, and the servers' own announcement lines are not repeated
    assert out.count(token) == 1, out
    assert "bearer token (shown once" not in out and out.count(login) == 1
    seen.update(_marked(run.mark, run.proc.pid))
    names = " ".join(_cmdline(pid) for pid in seen)
    for part in ("Xvfb", "dbus-daemon", "gnome-calculator", "serve --transport http", " ui "):
        assert part in names, names

    # MCP: refused without the token, initialize + a tool call with it
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"accept": "application/json, text/event-stream"}
    assert httpx.post(mcp_url, json=body, headers=headers, timeout=10).status_code == 401
    apps, tool_count = asyncio.run(_mcp_initialize(mcp_url, token))
    assert tool_count == 28
    assert "gnome-calculator" in apps  # the server acts on the private desktop

    # the dashboard: the login link logs in once, and a page renders
    with httpx.Client(base_url=dashboard, follow_redirects=False, timeout=10) as browser:
        first = browser.get(login.replace(dashboard, ""))
        assert first.status_code == 303 and first.headers["location"] == "/live"
        assert "httponly" in first.headers["set-cookie"].lower()
        page = browser.get("/errors")
        assert page.status_code == 200 and 'id="focus_mismatch"' in page.text
    assert httpx.get(login, timeout=10).status_code == 403  # spent

    # secrets stay out of the data dir (the script keeps them in a pipe, not a file)
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path

    # Ctrl-C: the script ends both servers, the app and the desktop, and nothing is left
    seen.update(_marked(run.mark, run.proc.pid))
    stop_started = time.monotonic()
    run.proc.send_signal(signal.SIGINT)
    run.proc.wait(90)
    stop_s = time.monotonic() - stop_started
    deadline = time.monotonic() + 10
    while _still_there(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _still_there(seen), f"left running: {_still_there(seen)}"
    assert not _marked(run.mark), f"left running: {_marked(run.mark)}"
    print(f"scripts/run: ready in {ready_s:.1f} s, ended in {stop_s:.1f} s, {len(seen)} processes")
    for url in (mcp_url, dashboard + "/live"):
        with pytest.raises(httpx.TransportError):
            httpx.get(url, timeout=3)


def test_scripts_run_refuses_a_taken_port_before_starting_anything(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    mark = uuid.uuid4().hex
    try:
        env = _env(tmp_path / "data", mark, DESKPILOT_UI_PORT=str(port))
        run = _start(env)
        status = run.proc.wait(120)
        time.sleep(0.3)
        assert status == 2, run.text()
        assert f"port {port} on 127.0.0.1 is taken" in run.text()
        assert "DESKPILOT_UI_PORT" in run.text()
        assert "starting a private virtual desktop" not in run.text()
        assert not _marked(mark)
    finally:
        taken.close()


@pytest.mark.parametrize(
    "ports, message",
    [
        ({"DESKPILOT_MCP_PORT": "http"}, "DESKPILOT_MCP_PORT=http is not a port number"),
        ({"DESKPILOT_UI_PORT": "70000"}, "DESKPILOT_UI_PORT=70000 is not a port number"),
        (
            {"DESKPILOT_MCP_PORT": "18765", "DESKPILOT_UI_PORT": "18765"},
            "are both 18765",
        ),
    ],
)
def test_scripts_run_refuses_bad_ports(tmp_path: Path, ports: dict[str, str], message: str) -> None:
    mark = uuid.uuid4().hex
    run = _start(_env(tmp_path / "data", mark, **ports))
    assert run.proc.wait(120) == 2
    time.sleep(0.3)
    assert message in run.text(), run.text()
    assert not _marked(mark)
