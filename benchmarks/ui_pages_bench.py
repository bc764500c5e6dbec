"""deskpilot ui: how long a session page takes with 1,000 timeline rows (target ≤ 300 ms).

A throwaway data dir gets one session whose timeline has 1,000 rows, written through the
store's own repositories the way the kernel writes them (session_manager, ledger rows with
their action_requested / action_executed or action_failed events, the observations between
actions, a pause and a resume, task verifications), and a second, ended session with the
same rows. A real ``deskpilot ui`` process serves that data dir; for each page:

* **server**: one GET over a kept-alive HTTP connection, request sent → whole body read
  (the fold of the events into cards and the Jinja render are all of it);
* **browser**: Chromium (Playwright, Debian's binary) navigating to the page, navigation
  start → the ``load`` event (``PerformanceNavigationTiming.loadEventEnd``), so the parse,
  the styles, the script and the layout of the 1,000-row timeline are in it.

Baselines, measured in the same run: the sessions list (a page with a short table) and the
same 1,000 rows read raw from SQLite in one process (``TimelineRepository.list``: what the
fold starts from). Medians (and p90) over ``--n`` loads (default 25) after 3 warm-ups.

Run: ``.venv/bin/python benchmarks/ui_pages_bench.py [--n 25] [--rows 1000] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from deskpilot.kernel.session_manager import SessionManager  # noqa: E402
from deskpilot.kernel.task_records import TaskRecords  # noqa: E402
from deskpilot.protocol.session import (  # noqa: E402
    Decision,
    EventType,
    RiskLevel,
    SessionState,
    TaskContract,
)
from deskpilot.protocol.wire import TargetSpec  # noqa: E402
from deskpilot.store.db import Database  # noqa: E402
from deskpilot.store.ledger import ActionRepository, ActionRow  # noqa: E402
from deskpilot.store.timeline import TimelineRepository  # noqa: E402

LOGIN_RE = re.compile(r"one-time login link[^:]*: (http://\S+/login\?token=\S+)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def seed(db: Database, rows: int, *, end: bool) -> str:
    """A delegated session whose timeline has exactly ``rows`` rows."""
    sessions = SessionManager(db)
    actions = ActionRepository(db)
    records = TaskRecords(db, sessions)
    contract = TaskContract(objective="compute 7*6 and check the display", max_steps=2_000)
    row = sessions.create("bench", "delegated", contract, TargetSpec(app="gnome-calculator"))
    sessions.transition(row.id, SessionState.OBSERVING)  # 1 row so far: session_started
    written = 1
    i = 0
    requested = {
        "kind": "click",
        "risk": "L1",
        "decision": "allow",
        "reason": "within_task_scope",
        "effect": "reversible_local",
        "targetKind": "element",
        "dataClasses": [],
        "signals": [],
    }
    reserve = 4 + (1 if end else 0)  # pause, resume, two verification events, the end
    while written + 3 <= rows - reserve:
        aid = f"act_{uuid.uuid4().hex[:16]}"
        sessions.record(
            row.id,
            EventType.OBSERVATION_CREATED,
            payload={
                "frameId": f"f-{i}",
                "treeVersion": uuid.uuid4().hex[:20],
                "app": "gnome-calculator",
                "windowId": "0x1a00003",
                "elementCount": 37,
            },
        )
        actions.insert(
            ActionRow(
                aid,
                row.id,
                "click",
                "h",
                f"f-{i}",
                "tv",
                RiskLevel.L1,
                Decision.ALLOW,
                "within_task_scope",
                "requested",
            )
        )
        sessions.record(row.id, EventType.ACTION_REQUESTED, action_id=aid, payload=requested)
        if i % 25 == 7:
            actions.finish(aid, "failed", error_code="stale_frame")
            payload: dict[str, Any] = {"code": "stale_frame", "retryable": True}
            sessions.record(row.id, EventType.ACTION_FAILED, action_id=aid, payload=payload)
        else:
            actions.finish(aid, "executed", outcome={"method": "semantic", "dispatched": True})
            sessions.record(
                row.id,
                EventType.ACTION_EXECUTED,
                action_id=aid,
                payload={"kind": "click", "method": "semantic", "risk": "L1"},
            )
        written += 3
        i += 1
        if i == 100:
            sessions.transition(row.id, SessionState.PAUSED, paused_by="person")
            sessions.transition(row.id, SessionState.OBSERVING, payload={"by": "person"})
            written += 2
            reserve -= 2
    while written < rows - (2 + (1 if end else 0)):  # fill to the exact count
        sessions.record(row.id, EventType.OBSERVATION_CREATED, payload={"frameId": "f-x"})
        written += 1
    records.record_verification(
        row.id,
        {
            "spec": {"kind": "visual", "assertion": "text_present", "text": "42"},
            "passed": True,
            "reason": "text_found",
        },
    )
    written += 2
    if end:
        sessions.transition(row.id, SessionState.COMPLETED, payload={"reason": "bench"})
        written += 1
    count = len(TimelineRepository(db).list(row.id, limit=rows * 2))
    assert count == rows, (count, rows)
    return row.id


def start_ui(env: dict[str, str]) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskpilot", "ui", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        found = LOGIN_RE.search(line)
        if found:
            url = found.group(1)
            return proc, url.split("/login")[0], url
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("deskpilot ui did not print its login link")


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median": statistics.median(ordered), "p90": p90, "n": len(ordered)}


def server_times(base: str, cookie: dict[str, str], path: str, n: int) -> list[float]:
    import httpx

    out = []
    with httpx.Client(base_url=base, cookies=cookie, timeout=30) as client:
        for k in range(n + 3):
            t0 = time.perf_counter()
            r = client.get(path)
            body = r.content
            took = (time.perf_counter() - t0) * 1000
            assert r.status_code == 200 and body, (path, r.status_code)
            if k >= 3:
                out.append(took)
    return out


#: per URL: [load, responseEnd, DOMContentLoaded, bytes] of each measured load
PHASES: dict[str, list[list[float]]] = {}


def browser_times(page: Any, url: str, n: int, *, wait_cards: int | None) -> list[float]:
    out = []
    for k in range(n + 3):
        page.goto(url, wait_until="load")
        if wait_cards is not None:
            shown = page.locator("#timeline li.card").count()
            assert shown >= wait_cards, shown
        timing = page.evaluate(
            "() => { const e = performance.getEntriesByType('navigation')[0];"
            " return [e.loadEventEnd - e.startTime, e.responseEnd - e.startTime,"
            " e.domContentLoadedEventEnd - e.startTime, e.transferSize]; }"
        )
        if k >= 3:
            out.append(float(timing[0]))
            PHASES.setdefault(url, []).append(timing)
        page.goto("about:blank")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=25)
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="deskpilot-ui-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    env["DESKPILOT_DATA_DIR"] = str(tmp / "data")
    os.environ["DESKPILOT_DATA_DIR"] = env["DESKPILOT_DATA_DIR"]
    db = Database()
    live = seed(db, args.rows, end=False)
    ended = seed(db, args.rows, end=True)
    cards = db.query_one(
        "SELECT COUNT(*) AS n FROM timeline_events WHERE session_id = ? AND type NOT IN "
        "('observation_created','action_executed','action_failed','verification_started')",
        (live,),
    )

    raw: list[float] = []
    repo = TimelineRepository(db)
    for k in range(args.n + 3):
        t0 = time.perf_counter()
        got = repo.list(live, limit=args.rows * 2)
        took = (time.perf_counter() - t0) * 1000
        assert len(got) == args.rows
        if k >= 3:
            raw.append(took)

    proc, base, login = start_ui(env)
    results: dict[str, Any] = {"rows": args.rows, "n": args.n}
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
            )
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(login)
            cookie = {c["name"]: c["value"] for c in context.cookies() if c["name"] == "dp_session"}
            pages = (
                ("session page, live (1,000 rows)", f"/sessions/{live}", 300),
                ("session page, ended (1,000 rows)", f"/sessions/{ended}", 300),
                ("baseline: sessions list", "/sessions", None),
            )
            # every page's server time first (no browser connected meanwhile), then the loads
            for name, path, _ in pages:
                results[name] = {"server_ms": stats(server_times(base, cookie, path, args.n))}
            for name, path, expect in pages:
                loads = browser_times(page, base + path, args.n, wait_cards=expect)
                results[name]["browser_ms"] = stats(loads)
                phases = PHASES[base + path]
                results[name]["browser_phases_ms"] = {
                    "response_end": statistics.median(p[1] for p in phases),
                    "dom_content_loaded": statistics.median(p[2] for p in phases),
                    "html_bytes": statistics.median(p[3] for p in phases),
                }
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
        db.close()
        shutil.rmtree(tmp, ignore_errors=True)
    results["baseline: the same rows read raw (in process)"] = {"server_ms": stats(raw)}
    results["visible cards (not observations)"] = int(cards["n"]) if cards else None
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.rows} timeline rows, median (p90) of {args.n} loads after 3 warm-ups")
    print(f"{'page':<48} {'server ms':>18} {'browser load ms':>18}  response/DCL ms, bytes")
    for name, value in results.items():
        if not isinstance(value, dict):
            continue
        s = value["server_ms"]
        b = value.get("browser_ms")
        shown_b = f"{b['median']:.1f} ({b['p90']:.1f})" if b else "—"
        ph = value.get("browser_phases_ms")
        extra = (
            f"  {ph['response_end']:.0f} / {ph['dom_content_loaded']:.0f}, {ph['html_bytes']:.0f}"
            if ph
            else ""
        )
        print(f"{name:<48} {s['median']:>8.1f} ({s['p90']:.1f}) {shown_b:>18}{extra}")


if __name__ == "__main__":
    main()
