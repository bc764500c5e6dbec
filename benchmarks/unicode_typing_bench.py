"""Typing benchmark: XTEST typing into a Chromium textarea, ASCII and 100 unmapped characters.

Run: ``.venv/bin/python benchmarks/unicode_typing_bench.py [--rounds N]``

Starts a private virtual desktop (Xvfb 1280×800), opens Chromium on a loopback page whose
textarea posts its value (with a sequence number) on every input event, and types with the
host's ``XInput.type_text`` in this process. Measured per text (medians over the rounds):

* call — how long ``type_text`` takes (what the action costs the host);
* visible — from the call's start until the page reports exactly the typed text (or the
  page went quiet with something else: that round counts as wrong);
* exact — rounds whose text arrived exactly.

Texts: 50 ASCII characters (the layout has them all: no remapping), and 100 distinct
Cyrillic + Latin-1 characters (none on the layout; ~19 spare keycodes, so each keycode is
reused about five times per text).

Baseline in the same run: the same code with its barriers switched off (``barrier``
returning at once, no pause) — keycodes reused as soon as the pool runs out, as before the
fix. The pause fallback (for apps that do not answer ``_NET_WM_PING``) is measured too. The
code before the fix itself can be measured by putting an older ``src`` first on PYTHONPATH
(``PYTHONPATH=<old>/src``; then only the ASCII figures compare).
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import threading
import time

from deskpilot import desktop as vdesk
from deskpilot.desktop import apps

ASCII50 = "The quick brown fox jumps over the lazy dog 012345"
CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ"
LATIN1 = "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞ"
HUNDRED = CYRILLIC + LATIN1[: 100 - len(CYRILLIC)]

PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Typing bench</title></head>
<body><textarea id="t" rows="12" cols="90" autofocus></textarea><script>
const t = document.getElementById('t'); let seq = 0;
function report() { seq += 1; fetch('/v', {method: 'POST', body: seq + ':' + t.value}); }
t.addEventListener('input', report);
window.addEventListener('load', () => { t.focus(); report(); });
</script></body></html>"""


class Value:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.seq = 0
        self.value: str | None = None
        self.changed = 0.0

    def put(self, body: str) -> None:
        number, _, value = body.partition(":")
        with self.cond:
            if int(number) > self.seq:
                self.seq, self.value, self.changed = int(number), value, time.perf_counter()
            self.cond.notify_all()

    def wait(self, expected: str, quiet_s: float = 1.0, timeout: float = 20.0) -> bool:
        """True once the value is ``expected``; False when it stays something else."""
        deadline = time.perf_counter() + timeout
        with self.cond:
            while time.perf_counter() < deadline:
                if self.value == expected:
                    return True
                if self.changed and time.perf_counter() - self.changed > quiet_s:
                    return False
                self.cond.wait(0.02)
        return False


def serve(value: Value) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def do_POST(self) -> None:
            value.put(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
            self.send_response(204)
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    value = Value()
    server = serve(value)
    chromium = apps.launch_chromium(f"http://127.0.0.1:{server.server_address[1]}/")
    try:
        if not value.wait("", quiet_s=60, timeout=60):
            raise SystemExit("the page did not load")
        time.sleep(1.0)
        from deskpilot.host.x11.connection import XConnection
        from deskpilot.host.x11.input import HeldInputs, XInput
        from deskpilot.host.x11.keymap import parse_chord

        conn = XConnection()
        xi = XInput(conn, HeldInputs())
        xi.click(640, 100)
        time.sleep(0.5)
        ping = getattr(xi, "ping", None)  # None: the code before the fix is on the path

        def clear() -> None:
            xi.press_chord(parse_chord("ctrl+a"))
            xi.press_chord(parse_chord("BackSpace"))
            value.wait("", quiet_s=2.0)
            time.sleep(0.1)

        def run(label: str, text: str, mode: str) -> tuple[float, float, int]:
            if ping is None:
                pass
            elif mode == "off":  # the behaviour before the fix: reuse at once
                xi.keymap.barrier = lambda: True
            elif mode == "pause":  # an app without _NET_WM_PING
                xi.keymap.barrier = None
            else:
                xi.keymap.barrier = ping
            calls, visible, exact = [], [], 0
            barriers0 = getattr(xi.keymap, "barriers", 0)
            settles0 = getattr(xi.keymap, "settles", 0)
            for _ in range(args.rounds):
                clear()
                start = time.perf_counter()
                xi.type_text(text)
                calls.append(time.perf_counter() - start)
                ok = value.wait(text)
                if ok:
                    exact += 1
                    visible.append(value.changed - start)
                elif mode != "off":
                    print(f"   wrong: {value.value!r}")
                    value.wait(text, quiet_s=3.0)  # let a slow page finish before clearing
            per = (getattr(xi.keymap, "barriers", 0) - barriers0) / args.rounds
            per_settle = (getattr(xi.keymap, "settles", 0) - settles0) / args.rounds
            vis = statistics.median(visible) * 1000 if visible else float("nan")
            call = statistics.median(calls) * 1000
            print(
                f"{label:44} call {call:8.1f} ms   visible {vis:8.1f} ms   "
                f"exact {exact}/{args.rounds}   barriers/text {per:.1f} + {per_settle:.1f}"
            )
            return call, vis, exact

        print(f"spare keycodes: {len(xi.keymap._spare)}; rounds: {args.rounds}")
        xi.type_text("warm up")  # the first keys after focusing can be lost to the page
        time.sleep(0.5)
        if ping is None:
            run("ASCII 50, code on PYTHONPATH", ASCII50, "")
            run("100 distinct unmapped, code on PYTHONPATH", HUNDRED, "")
        else:
            a_new = run("ASCII 50 (no keycode is remapped)", ASCII50, "ping")
            u_new = run("100 distinct unmapped, ping barrier (fixed)", HUNDRED, "ping")
            u_pause = run("100 distinct unmapped, pause fallback", HUNDRED, "pause")
            u_old = run("100 distinct unmapped, no barrier (baseline)", HUNDRED, "off")
            print(f"unmapped call ratio ping/baseline: {u_new[0] / u_old[0]:.2f}")
            print(f"unmapped visible, ping vs ASCII 50: {u_new[1] / a_new[1]:.2f}x")
            print(f"unmapped call ratio pause/ping: {u_pause[0] / u_new[0]:.2f}")
            ping.close()
        xi.keymap.restore()
        conn.close()
    finally:
        chromium.stop()
        server.shutdown()
        server.server_close()
        vdesk.down(state)


if __name__ == "__main__":
    main()
