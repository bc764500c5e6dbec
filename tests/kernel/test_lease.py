"""One desktop, one driver across processes: a second kernel process on the same X display is
refused (``actuator_lease_conflict`` naming the holder's pid) before anything reaches the
desktop, the holder lets go after its linger or at once when its session stops, and a process
killed with SIGKILL leaves no stale lock.

The other process is a real one: a kernel in a child Python process (``Worker``) on the private
desktop, driven over stdin/stdout. Both kernels act through the recorded in-process backend
(a stand-in for the desktop, not for the kernel under test), so what reached "the desktop" is
exactly the backend's ``executed`` list of each process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from deskpilot import desktop as vdesk
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.lease import DisplayLease, display_key
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import SessionState
from deskpilot.protocol.wire import TypeTextAction
from deskpilot.store.db import Database

from . import trees
from .backends import RecordedBackend, screen

pytestmark = pytest.mark.desktop

TESTS_DIR = Path(__file__).resolve().parents[1]

#: a kernel in its own process; one JSON line per reply
WORKER = r"""
import asyncio, faulthandler, json, os, signal, sys
faulthandler.register(signal.SIGUSR1)  # a stack dump when a test hangs
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import TypeTextAction
from deskpilot.store.db import Database
from kernel import trees
from kernel.backends import RecordedBackend, screen

db_path, agent, linger, delay, arm = sys.argv[1:6]

def out(**kw):
    sys.stdout.write(json.dumps(kw) + "\n"); sys.stdout.flush()

async def main():
    backend = RecordedBackend(default=screen(trees.EDITOR), delay=float(delay))
    kernel = Kernel(backend, Database(db_path), flags=Flags({}))
    kernel.coordinator.lease.linger_s = float(linger)
    kernel.client_session_began(agent)
    if arm == "1":
        await kernel.start_kill_switch()
    sid = await kernel.open_session(agent)
    loop = asyncio.get_running_loop()
    out(event="ready", pid=os.getpid(), session=sid, killSwitch=kernel.status()["killSwitch"])

    async def act(text):
        obs = (await kernel.observe(sid)).observation
        try:
            await kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text=text))
            out(event="done", ok=True, executed=len(backend.executed))
        except DeskpilotError as exc:
            out(event="done", ok=False, code=exc.code.value, details=exc.details)
        except BaseException as exc:
            out(event="done", ok=False, code=repr(exc), details={})
            raise

    tasks = []
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line or line == "quit":
            break
        if line.startswith("act "):
            tasks.append(asyncio.ensure_future(act(line[4:])))
            while not (kernel.coordinator.action_lock.locked() or tasks[-1].done()):
                await asyncio.sleep(0.005)
            out(event="acting")
        elif line == "status":
            st = kernel.status()
            out(event="status", killSwitch=st["killSwitch"], desktopLease=st["desktopLease"],
                halted=st["halt"]["halted"], state=kernel.session_state(sid).value,
                presses=getattr(kernel._listener, "presses", 0),
                remote=getattr(kernel._listener, "remote_presses", 0))
        elif line == "stop":
            await kernel.stop(sid)
            out(event="stopped")
    for t in tasks:
        await t
    await kernel.close()

asyncio.run(main())
"""


class Worker:
    """A kernel in a child process on the private desktop."""

    def __init__(
        self,
        db: Path,
        agent: str = "agent-a",
        *,
        linger: float = 30.0,
        delay: float = 0.0,
        arm: bool = False,
    ) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(TESTS_DIR) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), agent, str(linger), str(delay), str(int(arm))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.backlog: list[dict[str, Any]] = []
        self.ready = self.read("ready")
        self.pid = self.proc.pid

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self, event: str, timeout: float = 20.0) -> dict[str, Any]:
        """The next message of that kind (others are kept for later reads, in order)."""
        assert self.proc.stdout is not None
        for i, msg in enumerate(self.backlog):
            if msg.get("event") == event:
                return self.backlog.pop(i)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"worker exited ({self.proc.poll()}) before {event!r}")
            msg: dict[str, Any] = json.loads(line)
            if msg.get("event") == event:
                return msg
            self.backlog.append(msg)
        raise AssertionError(f"no {event!r} from the worker in time")

    async def aread(self, event: str, timeout: float = 20.0) -> dict[str, Any]:
        return await asyncio.to_thread(self.read, event, timeout)

    def status(self) -> dict[str, Any]:
        self.send("status")
        return self.read("status")

    def close(self) -> None:
        if self.proc.poll() is None:
            with _suppress():
                self.send("quit")
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


@pytest.fixture
def worker_factory(desktop: vdesk.DesktopState, tmp_path: Path) -> Iterator[Any]:
    made: list[Worker] = []

    def make(**kw: Any) -> Worker:
        w = Worker(kw.pop("db", tmp_path / "a.sqlite3"), **kw)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


@pytest.fixture
async def local(
    desktop: vdesk.DesktopState, tmp_path: Path
) -> AsyncIterator[tuple[Kernel, RecordedBackend]]:
    backend = RecordedBackend(default=screen(trees.EDITOR))
    kernel = Kernel(backend, Database(tmp_path / "b.sqlite3"), flags=Flags({}))
    kernel.client_session_began("agent-b")
    yield kernel, backend
    await kernel.close()


async def _act(kernel: Kernel, sid: str, text: str = "b" * 40) -> None:
    obs = (await kernel.observe(sid)).observation
    await kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text=text))


async def test_a_second_process_is_refused_fast_while_the_first_acts_and_lingers(
    worker_factory: Any, local: tuple[Kernel, RecordedBackend]
) -> None:
    kernel, backend = local
    a = worker_factory(delay=1.5, linger=1.5)
    a.send("act " + "a" * 40)
    a.read("acting")
    sid = await kernel.open_session("agent-b")

    # while A is inside its action: refused at once, nothing reaches B's desktop
    t0 = time.monotonic()
    with pytest.raises(DeskpilotError) as e:
        await _act(kernel, sid)
    refused_ms = (time.monotonic() - t0) * 1000
    assert e.value.code == ErrorCode.ACTUATOR_LEASE_CONFLICT
    assert e.value.details["holderPid"] == a.pid and e.value.retryable
    assert f"pid {a.pid}" in e.value.message and "middle of an action" in e.value.message
    assert "retryAfterMs" not in e.value.details  # unknown while it acts
    print(f"refused in {refused_ms:.1f} ms")
    assert refused_ms < 200, refused_ms
    assert backend.executed == []
    assert kernel.session_state(sid) == SessionState.OBSERVING  # refused, not broken
    lease = kernel.status()["desktopLease"]
    assert lease["state"] == "held_by_other" and lease["holder"]["pid"] == a.pid

    done = await a.aread("done")
    assert done["ok"] and done["executed"] == 1
    # between A's actions (within its linger) B is still refused, and told when to retry
    with pytest.raises(DeskpilotError) as e:
        await _act(kernel, sid)
    assert e.value.code == ErrorCode.ACTUATOR_LEASE_CONFLICT
    assert 0 < e.value.details["retryAfterMs"] <= 1500
    assert backend.executed == []

    # after the linger A has let go: B drives, and now A is the one refused
    await asyncio.sleep(e.value.details["retryAfterMs"] / 1000 + 0.2)
    await _act(kernel, sid)
    assert backend.executed == [(sid, "type_text")]
    assert kernel.status()["desktopLease"]["state"] == "held"
    a.send("act again")
    a.read("acting")
    refused = await a.aread("done")
    assert not refused["ok"] and refused["code"] == "actuator_lease_conflict"
    assert refused["details"]["holderPid"] == os.getpid()


async def test_stopping_the_holders_session_lets_go_at_once(
    worker_factory: Any, local: tuple[Kernel, RecordedBackend]
) -> None:
    kernel, backend = local
    a = worker_factory(linger=60.0)
    a.send("act x")
    assert (await a.aread("done"))["ok"]
    sid = await kernel.open_session("agent-b")
    with pytest.raises(DeskpilotError):
        await _act(kernel, sid)
    a.send("stop")
    a.read("stopped")
    await _act(kernel, sid)  # well within A's 60 s linger
    assert backend.executed == [(sid, "type_text")]


async def test_a_killed_holder_leaves_no_stale_lock(
    worker_factory: Any, local: tuple[Kernel, RecordedBackend]
) -> None:
    kernel, backend = local
    a = worker_factory(delay=30.0, linger=60.0)
    a.send("act " + "a" * 40)
    a.read("acting")
    sid = await kernel.open_session("agent-b")
    with pytest.raises(DeskpilotError):
        await _act(kernel, sid)
    os.kill(a.pid, signal.SIGKILL)
    a.proc.wait(5)
    t0 = time.monotonic()
    await _act(kernel, sid)
    print(f"acted {(time.monotonic() - t0) * 1000:.1f} ms after the holder's SIGKILL")
    assert time.monotonic() - t0 < 0.5
    assert backend.executed == [(sid, "type_text")]


async def test_on_a_shared_data_dir_a_refused_claim_stops_nobody(
    worker_factory: Any, desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    # the in-process rule (another agent's claim stops the holder) must not reach across
    # processes: the display lease is taken before anyone is stopped
    shared = tmp_path / "shared.sqlite3"
    a = worker_factory(db=shared, linger=30.0)
    a.send("act x")
    assert (await a.aread("done"))["ok"]
    backend = RecordedBackend(default=screen(trees.EDITOR))
    kernel = Kernel(backend, Database(shared), flags=Flags({}))
    try:
        kernel.client_session_began("agent-b")
        sid = await kernel.open_session("agent-b")
        with pytest.raises(DeskpilotError) as e:
            await _act(kernel, sid)
        assert e.value.code == ErrorCode.ACTUATOR_LEASE_CONFLICT
        assert kernel.session_state(a.ready["session"]) == SessionState.OBSERVING
        assert a.status()["state"] == "observing"
        assert backend.executed == []
    finally:
        await kernel.close()


def test_a_restarted_x_server_is_a_new_key(tmp_path: Path) -> None:
    # a display number nobody uses, with a real socket where X servers put theirs
    num = next(n for n in range(700, 800) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    path = Path(f"/tmp/.X11-unix/X{num}")
    keys = []
    for _ in range(2):
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        try:
            keys.append(display_key(f":{num}")[0])
            assert display_key(f":{num}.0")[0] == keys[-1]  # the screen does not matter
            assert display_key(f"unix:{num}")[0] == keys[-1]
        finally:
            s.close()
            path.unlink()
        time.sleep(0.01)
    assert keys[0] != keys[1]
    assert display_key("remote.example:3")[0] == "remote.example-3"


def test_without_a_display_there_is_nothing_to_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    lease = DisplayLease()
    lease.acquire("s", "a")
    assert not lease.held
    assert lease.status() == {"state": "none", "cause": "no X display (DISPLAY is not set)"}
