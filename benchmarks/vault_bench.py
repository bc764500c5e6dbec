"""Vault benchmarks: encrypt + store a 1280x800 PNG, and fetch a preview over loopback HTTP.

Run: ``.venv/bin/python benchmarks/vault_bench.py [--rounds N]``

Targets (issue 7): store ≤ 15 ms median, preview fetch ≤ 5 ms median. Baselines measured in
the same run on the same disk:

* store: writing the same bytes *unencrypted* with the same temp + fsync + rename protocol,
  so the ratio is the cost of AES-256-GCM and the vault's bookkeeping;
* fetch: a bare uvicorn app returning the same bytes from memory, so the ratio is the cost
  of URL checks, token lookup, the database row, the file read and decryption.

Everything runs in a fresh temp data dir with a file key; nothing touches the real vault.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import secrets
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from PIL import Image, ImageDraw


def screenshot_like_png(width: int = 1280, height: int = 800) -> bytes:
    """Flat panels, text and a few photos' worth of noise: compresses like a real desktop."""
    rnd = random.Random(7)
    img = Image.new("RGB", (width, height), (246, 245, 244))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, width, 36), fill=(48, 48, 48))
    draw.rectangle((0, 36, 220, height), fill=(235, 235, 235))
    for row in range(60):
        y = 50 + row * 12
        line = " ".join("lorem ipsum dolor sit amet" for _ in range(3))
        draw.text((240, y), line, fill=(0, 0, 0))
        draw.text((12, y), f"item {row}", fill=(40, 40, 40))
    noise = Image.frombytes("RGB", (320, 200), rnd.randbytes(320 * 200 * 3))
    img.paste(noise, (900, 500))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def bench_store(root: Path, png: bytes, rounds: int) -> dict[str, float]:
    from deskpilot.vault.store import Vault, _write_atomic

    vault = Vault.open(root / "snapshot-vault")
    plain_dir = root / "plain"
    plain_dir.mkdir()
    enc: list[float] = []
    base: list[float] = []
    for i in range(rounds + 5):
        t0 = time.perf_counter()
        vault.put(png, blob_id=f"blob_{i}", kind="image")
        t1 = time.perf_counter()
        _write_atomic(plain_dir, secrets.token_hex(24) + ".png", png)
        t2 = time.perf_counter()
        if i >= 5:  # warm-up
            enc.append(t1 - t0)
            base.append(t2 - t1)
    return {"store_ms": median_ms(enc), "baseline_ms": median_ms(base)}


def bench_capture(root: Path, png: bytes, rounds: int) -> dict[str, float]:
    """The whole capture_app_snapshot (no regions: original stored as is + a 1200 preview)."""
    from deskpilot.protocol.wire import AppIdentity, Rect, WindowInfo
    from deskpilot.store.db import Database
    from deskpilot.vault.service import SnapshotService
    from deskpilot.vault.store import Vault

    db = Database(root / "capture.sqlite3")
    svc = SnapshotService(db, Vault.open(root / "snapshot-vault"))
    app = AppIdentity(executable="mousepad")
    win = WindowInfo(window_id="0x1", bounds=Rect(x=0, y=0, width=1280, height=800), app=app)
    plain: list[float] = []
    redacted: list[float] = []
    evidence: list[float] = []
    regions = [Rect(x=300, y=200, width=240, height=28)]
    for i in range(rounds + 3):
        t0 = time.perf_counter()
        svc.capture_app_snapshot(png, app=app, window=win)
        t1 = time.perf_counter()
        svc.capture_app_snapshot(png, app=app, window=win, sensitive_regions=regions)
        t2 = time.perf_counter()
        svc.record_evidence(png, app=app, window=win, sensitive_regions=regions)
        t3 = time.perf_counter()
        if i >= 3:
            plain.append(t1 - t0)
            redacted.append(t2 - t1)
            evidence.append(t3 - t2)
    db.close()
    return {
        "capture_ms": median_ms(plain),
        "capture_redacted_ms": median_ms(redacted),
        "evidence_ms": median_ms(evidence),
    }


class _Static:
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"image/png")],
            }
        )
        await send({"type": "http.response.body", "body": self.body})


def _serve_static(body: bytes) -> tuple[str, uvicorn.Server, threading.Thread]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(_Static(body), log_config=None, access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.005)
    return f"http://127.0.0.1:{sock.getsockname()[1]}/x", server, thread


def bench_fetch(root: Path, png: bytes, rounds: int) -> dict[str, float]:
    from deskpilot.protocol.wire import AppIdentity
    from deskpilot.store.db import Database
    from deskpilot.vault.service import SnapshotService
    from deskpilot.vault.store import Vault
    from deskpilot.web.preview import PreviewServer

    db = Database(root / "fetch.sqlite3")
    svc = SnapshotService(db, Vault.open(root / "snapshot-vault"))
    server = PreviewServer(svc)
    server.start()
    rec = svc.capture_app_snapshot(png, app=AppIdentity(executable="mousepad"), preview_ttl_s=3600)
    assert rec.preview_url is not None
    preview_bytes = svc.read_preview(rec.id) or b""
    static_url, static_server, static_thread = _serve_static(preview_bytes)
    fetch: list[float] = []
    base: list[float] = []
    with httpx.Client() as client:
        for i in range(rounds + 10):
            t0 = time.perf_counter()
            r1 = client.get(rec.preview_url)
            t1 = time.perf_counter()
            r2 = client.get(static_url)
            t2 = time.perf_counter()
            assert r1.status_code == 200 and r1.content == preview_bytes
            assert r2.status_code == 200
            if i >= 10:
                fetch.append(t1 - t0)
                base.append(t2 - t1)
    server.stop()
    static_server.should_exit = True
    static_thread.join(5)
    db.close()
    return {
        "fetch_ms": median_ms(fetch),
        "baseline_ms": median_ms(base),
        "preview_bytes": float(len(preview_bytes)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    png = screenshot_like_png()
    with tempfile.TemporaryDirectory(prefix="deskpilot-vault-bench-") as tmp:
        root = Path(tmp)
        os.environ["DESKPILOT_DATA_DIR"] = str(root)
        os.environ["DESKPILOT_VAULT_KEY_STORAGE"] = "file"
        store = bench_store(root, png, args.rounds)
        capture = bench_capture(root, png, max(20, args.rounds // 5))
        fetch = bench_fetch(root, png, args.rounds)
    print(f"PNG 1280x800: {len(png):,} bytes; rounds {args.rounds}")
    print(
        f"encrypt+store   median {store['store_ms']:.2f} ms  (target <= 15 ms)  "
        f"baseline plain atomic write {store['baseline_ms']:.2f} ms  "
        f"ratio {store['store_ms'] / store['baseline_ms']:.2f}x"
    )
    print(
        f"preview fetch   median {fetch['fetch_ms']:.2f} ms  (target <= 5 ms)  "
        f"baseline bare uvicorn {fetch['baseline_ms']:.2f} ms  "
        f"ratio {fetch['fetch_ms'] / fetch['baseline_ms']:.2f}x  "
        f"({int(fetch['preview_bytes']):,} byte preview)"
    )
    print(
        f"capture_app_snapshot median {capture['capture_ms']:.2f} ms (original + preview); "
        f"with one secure region {capture['capture_redacted_ms']:.2f} ms; "
        f"evidence frame {capture['evidence_ms']:.2f} ms"
    )
    ok = store["store_ms"] <= 15.0 and fetch["fetch_ms"] <= 5.0
    print("targets met" if ok else "TARGETS MISSED")


if __name__ == "__main__":
    main()
