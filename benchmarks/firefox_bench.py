"""Firefox ESR through the real host: what observing a form page and acting on it costs, and
what the state shows (host/atspi/gecko.py, host/atspi/combo_view.py, host/text_entry.py).

Starts its own private desktop (unless DISPLAY is set), a form served on loopback and
Debian's firefox-esr on a throwaway profile, then, through one host process
(``python -m deskpilot.host``, the tests' harness):

* **observe**: the form's window, tree only — median time, nodes read, elements shown, and
  whether the hidden New Tab page, the hidden menu bar or ";;" action names are in it;
* **type_text** into a text field by element id (the field emptied by ``set_value`` before
  each) — median time, and whether the field shows the text afterwards (``effect``);
* **set_value** on the ``<select>``, alternating two options — median time, and whether the
  page heard each change (its title counts them).

Run: ``.venv/bin/python benchmarks/firefox_bench.py [--runs 11]``. With ``PYTHONPATH`` set to
another tree's ``src`` the same script measures that tree (its host is spawned with the same
environment), which is how the before figures in docs/benchmarks.md were taken.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "host"))

from host_harness import HostProcess, line_id  # noqa: E402

from deskpilot import desktop as vdesk  # noqa: E402
from deskpilot.desktop import apps as dapps  # noqa: E402

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Form</title></head><body>
<form><label for="name">Name</label> <input id="name">
<label for="color">Color</label> <select id="color" onchange="n++">
<option>Red</option><option>Green</option><option>Blue</option></select>
<label><input type="checkbox"> Agree</label> <button type="button">Send</button></form>
<script>let n = 0; setInterval(() => { const t = 'changes ' + n;
if (document.title !== t) document.title = t; }, 30);</script></body></html>"""
PREFS = {
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "app.update.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
}


@contextlib.contextmanager
def served() -> Iterator[str]:
    body = PAGE.encode()

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


def firefox(url: str, profile: Path) -> dapps.App:
    """firefox-esr on a throwaway profile (written here: the before tree has no launcher)."""
    profile.mkdir(parents=True)
    prefs = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in PREFS.items()]
    (profile / "user.js").write_text("\n".join(prefs) + "\n")
    binary = shutil.which("firefox-esr") or "firefox-esr"
    return dapps.launch([binary, "--no-remote", "--profile", str(profile), url])


def observe(host: HostProcess, pid: int) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    obs = host.call(
        {"type": "observe", "target": {"pid": pid}, "sessionId": "b", "includeScreenshot": False}
    )
    return obs, (time.perf_counter() - t0) * 1000


def act(host: HostProcess, obs: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return host.call(
        {
            "type": "execute_action",
            "sessionId": "b",
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": action,
            "observeAfter": True,
        },
        timeout=40,
    )


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else float("nan")


def run(runs: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="firefox-bench-"))
    with served() as url:
        app = firefox(url, scratch / "profile")
        try:
            dapps.wait_accessible(pid=app.pid, timeout=90)
            with HostProcess() as host:
                measure(host, app.pid, runs)
        finally:
            app.stop()
            shutil.rmtree(scratch, ignore_errors=True)


def measure(host: HostProcess, pid: int, runs: int) -> None:
    deadline = time.monotonic() + 90
    while True:
        obs, _ = observe(host, pid)
        tree = obs.get("tree", "")
        if obs["type"] == "observation" and "Send" in tree and "[busy]" not in tree:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"the form never showed:\n{tree}")
        time.sleep(0.2)
    times, elements = [], []
    for _ in range(runs):
        obs, ms = observe(host, pid)
        times.append(ms)
        elements.append(obs["elementCount"])
    tree = obs["tree"]
    print(
        f"observe: {median(times)} ms median of {runs}, {median(elements):.0f} elements, "
        f"{len(tree)} characters; New Tab listed: {'New Tab' in tree}, "
        f"menu bar listed: {'menuBar' in tree}, ';;' lines: {tree.count(';;')}, "
        f"select options listed: {'[options:' in tree}"
    )
    typed, landed, effects = [], 0, []
    for i in range(runs):
        field = line_id(obs["tree"], r'textField "Name"')
        obs = act(host, obs, {"kind": "set_value", "elementId": field, "value": ""})["observation"]
        word = f"word{i}"
        done = act(host, obs, {"kind": "type_text", "elementId": field, "text": word})
        typed.append(done["durationMs"])
        effects.append(str(done.get("effect")))
        obs = done["observation"]
        landed += bool(re.search(rf'textField "Name" = "{word}"', obs["tree"]))
    print(
        f"type_text by element: {median(typed)} ms median of {runs}; the text landed "
        f"{landed}/{runs}; effect: {sorted(set(effects))}"
    )
    chose, heard = [], 0
    for i in range(runs):
        combo = line_id(obs["tree"], r'comboBox "Color"')
        count = re.search(r'document "changes (\d+)"', obs["tree"])
        before = int(count.group(1)) if count else -1
        value = ("Green", "Blue")[i % 2]
        done = act(host, obs, {"kind": "set_value", "elementId": combo, "value": value})
        if done["type"] != "action_result":  # refused: the before tree could not choose
            print(f"set_value on the <select>: {done.get('code')} {done.get('details')}")
            return
        chose.append(done["durationMs"])
        t_end = time.monotonic() + 2
        while time.monotonic() < t_end:
            obs, _ = observe(host, pid)
            if f'document "changes {before + 1}"' in obs["tree"]:
                heard += 1
                break
            time.sleep(0.05)
    print(
        f"set_value on the <select>: {median(chose)} ms median of {runs}; "
        f"the page heard {heard}/{runs} changes"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")
    state = None
    if not os.environ.get("DISPLAY"):
        state = vdesk.up(1280, 800)
        os.environ.update(state.env)
    try:
        run(args.runs)
    finally:
        if state is not None:
            vdesk.down(state)


if __name__ == "__main__":
    main()
