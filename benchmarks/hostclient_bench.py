"""Host client overhead: ping round trip and observe, against the real host.

Run: ``.venv/bin/python benchmarks/hostclient_bench.py`` (starts its own private desktop and a
gnome-calculator, or zenity when the calculator is missing).

- ping: median round trip of ``HostClient.ping()`` (asyncio, id matching, lane, timeout),
  vs the baseline measured in the same run: a bare synchronous frame round trip
  (blocking write + blocking read on the pipes) to a host process of its own. Target
  <= 0.3 ms median.
- observe: median wall time of an observe through the client (and through the backend,
  which adds the target binding and the privacy gate; it keeps no observation cache, the
  kernel holds the frames) vs the host's own time for the same observes
  (``timingsMs.host`` in the observation: frame received → response built). Target: <= 5 % more.
- action: median wall time of one ``HostBackend.execute(ExecuteAction(observe_after=True))``
  (a focus_window; each action quotes the frame of the previous reply's post-action state,
  which the host bound) vs the host's own ``durationMs`` for it; the reply carries the settled
  window and the desktop's windows (``ActionReply.post``). Reported, no target.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch
from deskpilot.hostclient import client as client_module
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.client import HostClient
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.protocol.frames import FrameReader, FrameWriter
from deskpilot.protocol.wire import ExecuteAction, FocusWindowAction, TargetSpec

PINGS = 3000
OBSERVES = 60
ACTIONS = 20


def baseline_sync_ping(n: int) -> float:
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "deskpilot.host"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    writer, reader = FrameWriter(proc.stdin), FrameReader(proc.stdout)
    writer.write_json({"id": 0, "type": "get_capabilities"})
    reader.read()
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        writer.write_json({"id": i + 1, "type": "ping"})
        reader.read()
        samples.append(time.perf_counter() - t0)
    proc.stdin.close()
    proc.wait()
    return statistics.median(samples[n // 10 :])


def baseline_sync_observe(window: str, n: int) -> tuple[float, float]:
    """A bare synchronous observe round trip to a host of its own: (wall ms, host total ms)."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "deskpilot.host"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    writer, reader = FrameWriter(proc.stdin), FrameReader(proc.stdout)
    request = {"type": "observe", "sessionId": "bench", "target": {"windowId": window}}
    walls, totals = [], []
    for i in range(n + 5):
        t0 = time.perf_counter()
        writer.write_json({"id": i, **request})
        msg = reader.read().json()
        if msg.get("image"):
            reader.read()
        if i >= 5:
            walls.append((time.perf_counter() - t0) * 1000)
            totals.append(msg["timingsMs"].get("host", msg["timingsMs"]["total"]))
    proc.stdin.close()
    proc.wait()
    return statistics.median(walls), statistics.median(totals)


async def client_ping(n: int) -> float:
    client = HostClient(HostConfig(heartbeat_interval_s=3600))
    await client.start()
    try:
        for _ in range(200):
            await client.ping()
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            await client.ping()
            samples.append(time.perf_counter() - t0)
    finally:
        await client.close()
    return statistics.median(samples)


async def observe_overhead(pid: int) -> dict[str, float]:
    backend = HostBackend(HostConfig(), heartbeat=False)
    try:
        window = await _window_of(backend, pid)
        target = TargetSpec(window_id=window)
        client = backend.supervisor.client
        assert client is not None
        for _ in range(5):  # warm caches on both sides
            await client.observe(session_id="bench", target=target)
        # timestamps where the client hands bytes to the pipe and gets a response back, to
        # split the client's own processing from the host's and the pipe's
        host = client._host
        assert host is not None
        marks: dict[str, float] = {}
        # encode_json is the name client.py imported from protocol.frames (not re-exported)
        encode = client_module.encode_json  # type: ignore[attr-defined]
        deliver = host.protocol.parser._on_message

        def timed_encode(obj: object) -> bytes:
            data = encode(obj)
            marks["written"] = time.perf_counter()  # the write follows directly
            return data

        def timed_deliver(msg: dict[str, object], binary: bytes | None) -> None:
            marks["delivered"] = time.perf_counter()
            deliver(msg, binary)

        client_module.encode_json = timed_encode  # type: ignore[attr-defined]
        host.protocol.parser._on_message = timed_deliver
        wall_c, host_c, wall_b, host_b, sizes, elements, own = [], [], [], [], [], [], []
        for _ in range(OBSERVES):
            t0 = time.perf_counter()
            obs, png = await client.observe(session_id="bench", target=target)
            t1 = time.perf_counter()
            wall_c.append((t1 - t0) * 1000)
            own.append(((marks["written"] - t0) + (t1 - marks["delivered"])) * 1000)
            host_c.append(obs.timings_ms.get("host", obs.timings_ms["total"]))
            sizes.append(len(png or b""))
            elements.append(obs.element_count)
            t0 = time.perf_counter()
            state = await backend.observe("bench", target)
            wall_b.append((time.perf_counter() - t0) * 1000)
            host_b.append(
                state.observation.timings_ms.get("host", state.observation.timings_ms["total"])
            )
        bare_ms, bare_host_ms = await asyncio.to_thread(baseline_sync_observe, window, OBSERVES)
        return {
            "bare_ms": bare_ms,
            "bare_host_ms": bare_host_ms,
            "client_ms": statistics.median(wall_c),
            "own_ms": statistics.median(own),
            "host_ms": statistics.median(host_c),
            "backend_ms": statistics.median(wall_b),
            "host_b_ms": statistics.median(host_b),
            "png_kib": statistics.median(sizes) / 1024,
            "elements": statistics.median(elements),
        }
    finally:
        await backend.close()


async def action_round_trip(pid: int) -> dict[str, float]:
    backend = HostBackend(HostConfig(), heartbeat=False)
    try:
        window = await _window_of(backend, pid)
        await backend.bind_target("bench", TargetSpec(window_id=window))
        obs = (await backend.observe("bench", include_screenshot=False)).observation
        walls, hosts, windows = [], [], []
        for _ in range(ACTIONS + 2):
            request = ExecuteAction(
                id=0,
                session_id="bench",
                frame_id=obs.frame_id,
                tree_version=obs.tree_version,
                action=FocusWindowAction(),
                observe_after=True,
                settle_ms=100,
            )
            t0 = time.perf_counter()
            reply = await backend.execute(request)
            walls.append((time.perf_counter() - t0) * 1000)
            hosts.append(reply.result.duration_ms or 0.0)
            post = reply.post
            assert post is not None and post.windows, "the action carried no post-action state"
            assert window in {w.window_id for w in post.windows}
            windows.append(len(post.windows))
            obs = post.observation  # the host bound it: the next action quotes it
        return {
            "wall_ms": statistics.median(walls[2:]),
            "host_ms": statistics.median(hosts[2:]),
            "windows": statistics.median(windows),
        }
    finally:
        await backend.close()


async def _window_of(backend: HostBackend, pid: int) -> str:
    for _ in range(200):
        for w in await backend.list_windows():
            if w.app.pid == pid:
                return w.window_id
        await asyncio.sleep(0.1)
    raise AssertionError("the sample app has no window")


def sample_app() -> tuple[str, App]:
    calc = shutil.which("gnome-calculator")
    if calc:
        return "gnome-calculator", launch([calc])
    zenity = shutil.which("zenity")
    assert zenity, "needs gnome-calculator or zenity"
    return "zenity --info", launch([zenity, "--info", "--text", "benchmark"])


def main() -> None:
    os.environ[LOCAL_TRUST_ENV] = "1"  # the dev venv is an editable install
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    name, app = sample_app()
    try:
        time.sleep(2.0)
        base = baseline_sync_ping(PINGS)
        ping = asyncio.run(client_ping(PINGS))
        print(f"ping round trip, median of {PINGS}:")
        print(f"  through HostClient     {ping * 1000:.3f} ms   (target <= 0.300 ms)")
        print(
            f"  baseline: bare sync    {base * 1000:.3f} ms   (client/baseline {ping / base:.2f}x)"
        )
        r = asyncio.run(observe_overhead(app.pid))
        over_c = r["client_ms"] / r["host_ms"] - 1
        over_b = r["backend_ms"] / r["host_b_ms"] - 1
        over_bare = r["bare_ms"] / r["bare_host_ms"] - 1
        print(
            f"observe of {name} ({r['elements']:.0f} elements, PNG {r['png_kib']:.0f} KiB), "
            f"median of {OBSERVES}:"
        )
        print(f"  host's own time (timingsMs.host)  {r['host_ms']:.2f} ms")
        print(f"  through HostClient                 {r['client_ms']:.2f} ms  (+{over_c:.1%})")
        print(
            f"  through HostBackend                {r['backend_ms']:.2f} ms  (+{over_b:.1%} "
            f"vs its host total {r['host_b_ms']:.2f} ms)"
        )
        print(
            f"  baseline: bare sync round trip     {r['bare_ms']:.2f} ms  (+{over_bare:.1%} "
            f"vs its host total {r['bare_host_ms']:.2f} ms)"
        )
        print(
            f"  client's own processing            {r['own_ms']:.2f} ms  "
            f"({r['own_ms'] / r['host_ms']:.1%} of the host's time; target <= 5 %)"
        )
        a = asyncio.run(action_round_trip(app.pid))
        print(f"focus_window with observeAfter through HostBackend, median of {ACTIONS}:")
        print(f"  host's own time (durationMs)      {a['host_ms']:.2f} ms")
        print(
            f"  through HostBackend                {a['wall_ms']:.2f} ms  "
            f"(post-action state with {a['windows']:.0f} window(s) listed)"
        )
    finally:
        app.stop()
        vdesk.down(state)


if __name__ == "__main__":
    main()
