"""Broker overhead per action: freshness + policy + ledger write + timeline event.

Runs the real broker on a real SQLite file (WAL, in a temp dir) with an in-process desktop
that answers instantly, so what is timed is the kernel's own work. Baseline, measured in the
same run: calling that desktop's ``execute`` directly with the request built by the caller (the
cost without a broker). The broker path observes through ``kernel.observe``, since the kernel
holds the session's current frame.

    .venv/bin/python benchmarks/broker_bench.py [--n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from deskpilot.hostclient.api import ActionReply
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.policy import evaluate
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import TaskContract
from deskpilot.protocol.wire import (
    Action,
    ActionResult,
    AppIdentity,
    Capabilities,
    ClickAction,
    ExecuteAction,
    Observation,
    Rect,
    TargetSpec,
    TypeTextAction,
    WindowInfo,
)
from deskpilot.store.db import Database
from deskpilot.store.settings import SettingsModel

TREE = "\n".join(
    [
        '- window "Files" [1]',
        '  - alert "Permanently delete \\"notes.txt\\"?" [modal] [2]',
        '    - label "If you delete an item, it will be permanently lost." [3]',
        '    - button "Cancel" [actions: click] [4]',
        '    - button "Delete" [actions: click] [5]',
    ]
    + [f'  - listItem "file {i}.txt" [actions: click] [{i + 6}]' for i in range(90)]
    + ['  - text "Name" [focused] [editable] [96]']
)


class InstantDesktop:
    """The backend protocol (deskpilot.hostclient.api.DesktopBackend), answering at once.

    Like the host client it keeps no observation cache: the kernel holds the frames."""

    def __init__(self) -> None:
        self.n = 0
        self.reconnect_callbacks: list[Callable[[], None]] = []
        app = AppIdentity(pid=1, name="nautilus", executable="nautilus")
        self.base = Observation(
            id=0,
            frame_id="f0",
            tree_version="t0",
            app=app,
            window=WindowInfo(window_id="0x1", bounds=Rect(x=0, y=0, width=800, height=600)),
            tree=TREE,
            element_count=96,
        )

    async def capabilities(self) -> Capabilities:
        return Capabilities(id=0, host_version="bench", available=True)

    async def list_windows(self) -> list[WindowInfo]:
        return [self.base.window]

    async def observe(
        self,
        session_id: str,
        target: TargetSpec | None = None,
        *,
        include_screenshot: bool = True,
        bind: bool = True,
    ) -> ObservedState:
        self.n += 1
        obs = self.base.model_copy(update={"frame_id": f"f{self.n}"})
        return ObservedState(obs, None)

    async def execute(self, request: ExecuteAction) -> ActionReply:
        result = ActionResult(id=0, dispatched=True, method="semantic", kind=request.action.kind)
        return ActionReply(result)

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        return await self.observe(session_id, target, bind=False)

    async def cancel_session(self, session_id: str) -> None:
        return None

    async def abort_session(self, session_id: str, reason: str = "stop requested") -> bool:
        return False  # nothing is ever in flight

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
        return None

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        self.reconnect_callbacks.append(callback)

    async def close(self) -> None:
        return None


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.3f} ms"


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        desktop = InstantDesktop()
        db = Database(Path(tmp) / "bench.sqlite3")
        kernel = Kernel(desktop, db, flags=Flags({}))
        sid = await kernel.open_session("bench", TaskContract(max_steps=100_000))
        actions: list[Action] = [ClickAction(element_id=5), TypeTextAction(text="report.txt")]

        broker_t: list[float] = []
        direct_t: list[float] = []
        policy_t: list[float] = []
        settings = SettingsModel()
        contract = TaskContract()
        for i in range(n + 200):
            action = actions[i % 2]
            obs = (await kernel.observe(sid, include_screenshot=False)).observation
            t0 = time.perf_counter()
            await kernel.execute(sid, obs.frame_id, obs.tree_version, action)
            t1 = time.perf_counter()
            obs = (await desktop.observe("direct")).observation
            t2 = time.perf_counter()
            await desktop.execute(
                ExecuteAction(
                    id=0,
                    session_id="direct",
                    frame_id=obs.frame_id,
                    tree_version=obs.tree_version,
                    action=action,
                )
            )
            t3 = time.perf_counter()
            evaluate(action, obs, contract, settings)
            t4 = time.perf_counter()
            if i >= 200:  # warm-up excluded
                broker_t.append(t1 - t0)
                direct_t.append(t3 - t2)
                policy_t.append(t4 - t3)
        overhead = [b - d for b, d in zip(broker_t, direct_t, strict=True)]
        rows = db.query_one("SELECT COUNT(*) AS n FROM actions")
        print(f"actions through the broker: {n} (+200 warm-up), ledger rows: {rows['n']}")  # type: ignore[index]
        print(f"baseline, desktop execute alone : {ms(direct_t)} median")
        print(f"broker.execute end to end       : {ms(broker_t)} median")
        print(
            f"broker overhead per action      : {ms(overhead)} median "
            f"(p90 {sorted(overhead)[int(0.9 * len(overhead))] * 1000:.3f} ms)"
        )
        print(f"  of which policy evaluate      : {ms(policy_t)} median (96-element tree)")
        ratio = statistics.median(broker_t) / statistics.median(direct_t)
        print(f"ratio broker / baseline         : {ratio:.1f}x")
        print(
            "target: overhead <= 1 ms median ->",
            "PASS" if statistics.median(overhead) <= 0.001 else "FAIL",
        )
        await kernel.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    asyncio.run(main(parser.parse_args().n))
