"""Capture benchmark: the host's in-process grab of a 1280×800 window, its PNG, the model frame.

Run: ``.venv/bin/python benchmarks/capture_bench.py [--rounds N]``

Starts a private virtual desktop (Xvfb 1280×800 with MIT-SHM), opens Chromium on a local
page full of text at 1280×800, and measures (medians):

* host capture — ``deskpilot.host.x11.capture.Capturer.grab`` (mss, XShmGetImage, one
  persistent connection) of the window's rectangle; target ≤ 10 ms;
* the model frame — long edge ≤ 1,600 px, JPEG q85 with Pillow — from that capture;
  target ≤ 15 ms more;
* the PNG the host sends (zlib level 1) and Pillow's default level 6, for the record.

Baselines in the same run: XCB GetImage without shared memory (mss ``xgetimage`` backend),
python-xlib's core-protocol GetImage (a pure-Python X client), and ImageMagick's
``import -window root`` as a subprocess (what a screenshot tool costs) when installed.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

MODEL_LONG_EDGE = 1600
MODEL_JPEG_QUALITY = 85


def median_ms(fn: Callable[[], Any], rounds: int, warmup: int = 3) -> tuple[float, Any]:
    result = None
    for _ in range(warmup):
        result = fn()
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        result = fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), result


def model_frame(image: Image.Image) -> bytes:
    """What the decision layer receives: long edge ≤ 1,600 px, JPEG q85."""
    long_edge = max(image.size)
    if long_edge > MODEL_LONG_EDGE:
        scale = MODEL_LONG_EDGE / long_edge
        size = (round(image.width * scale), round(image.height * scale))
        image = image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=MODEL_JPEG_QUALITY)
    return buf.getvalue()


def pillow_png(image: Image.Image, level: int) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG", compress_level=level)
    return buf.getvalue()


def page(path: Path) -> str:
    rows = "\n".join(
        f"<tr><td>{i}</td><td>Item number {i}</td><td>lorem ipsum dolor sit amet, "
        f"consectetur adipiscing elit</td><td><button>Open {i}</button></td></tr>"
        for i in range(120)
    )
    path.write_text(
        "<!doctype html><meta charset=utf-8><title>Capture bench</title>"
        "<body style='font-family:sans-serif'><h1>Capture benchmark</h1>"
        "<p style='background:#3465a4;color:white;padding:8px'>A banner with colour</p>"
        f"<table border=1>{rows}</table></body>"
    )
    return path.as_uri()


def wait_window(pid: int, timeout: float = 60.0) -> Any:
    from deskpilot.host.x11.connection import XConnection
    from deskpilot.host.x11.windows import WindowLister

    lister = WindowLister(XConnection())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        windows, _ = lister.list_windows()
        for w in windows:
            if w.pid == pid and w.visible and w.bounds.width >= 1000:
                return w
        time.sleep(0.2)
    raise SystemExit("Chromium did not open a window")


def run(rounds: int) -> None:
    import mss
    from Xlib import X, display

    from deskpilot.desktop import apps
    from deskpilot.host.x11.capture import Capturer, encode_png

    display_name = os.environ["DISPLAY"]
    scratch = Path(tempfile.mkdtemp(prefix="capture-bench-"))
    chromium = apps.launch_chromium(page(scratch / "page.html"))
    try:
        window = wait_window(chromium.pid)
        time.sleep(3.0)  # let the page paint
        rect = window.bounds
        print(f"window {window.window_id} {rect.width}×{rect.height} at ({rect.x}, {rect.y})")

        capturer = Capturer(display_name)
        host_ms, frame = median_ms(lambda: capturer.grab(rect), rounds)
        print(f"capture path: {'XShmGetImage' if capturer.uses_shm else 'GetImage'}")
        image = frame.image()
        to_image_ms, _ = median_ms(frame.image, rounds)
        model_ms, jpeg = median_ms(lambda: model_frame(frame.image()), rounds)
        png_ms, png = median_ms(lambda: encode_png(image), max(rounds // 4, 10))
        png1_ms, png1 = median_ms(lambda: pillow_png(image, 1), max(rounds // 4, 10))
        png6_ms, png6 = median_ms(lambda: pillow_png(image, 6), max(rounds // 4, 10))
        big = image.resize((2560, 1600))
        model_big_ms, _ = median_ms(lambda: model_frame(big), max(rounds // 4, 10))

        region = {"left": rect.x, "top": rect.y, "width": rect.width, "height": rect.height}
        with mss.MSS(display=display_name, backend="xgetimage") as plain:
            getimage_ms, _ = median_ms(lambda: plain.grab(region), rounds)
        xdisplay = display.Display(display_name)
        root = xdisplay.screen().root
        xlib_ms, _ = median_ms(
            lambda: root.get_image(rect.x, rect.y, rect.width, rect.height, X.ZPixmap, 0xFFFFFFFF),
            max(rounds // 4, 10),
        )
        xdisplay.close()
        import_ms = None
        if shutil.which("import"):
            out = scratch / "shot.png"
            import_ms, _ = median_ms(
                lambda: subprocess.run(
                    ["import", "-silent", "-window", "root", str(out)], check=True
                ),
                5,
                warmup=1,
            )
    finally:
        chromium.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    print()
    print(f"{'measure':58} {'median':>10}")
    print(f"{'host capture (mss XShm, persistent connection)':58} {host_ms:8.2f} ms")
    print(f"{'  + BGRX -> Pillow image (zero copy)':58} {to_image_ms:8.2f} ms")
    print(f"{'model frame from the capture (JPEG q85, 1280 long edge)':58} {model_ms:8.2f} ms")
    print(f"{'model frame of a 2560x1600 frame (resize to 1600 + JPEG)':58} {model_big_ms:8.2f} ms")
    print(f"{'PNG the host sends (filter None, zlib level 1)':58} {png_ms:8.2f} ms  {len(png):,} B")
    print(f"{'PNG by Pillow, level 1 (adaptive filters)':58} {png1_ms:8.2f} ms  {len(png1):,} B")
    print(f"{'PNG by Pillow, level 6 (its default)':58} {png6_ms:8.2f} ms  {len(png6):,} B")
    print(f"{'model frame size':58} {'':8} {len(jpeg):,} B")
    print()
    print("baselines (same run)")
    print(
        f"{'XCB GetImage, no shared memory (mss xgetimage)':58} {getimage_ms:8.2f} ms"
        f"  ratio {getimage_ms / host_ms:5.1f}x"
    )
    print(
        f"{'python-xlib core GetImage (pure-Python client)':58} {xlib_ms:8.2f} ms"
        f"  ratio {xlib_ms / host_ms:5.1f}x"
    )
    if import_ms is not None:
        print(
            f"{'ImageMagick import -window root (subprocess)':58} {import_ms:8.2f} ms"
            f"  ratio {import_ms / host_ms:5.1f}x"
        )
    print()
    verdict = "PASS" if host_ms <= 10 else "FAIL"
    print(f"target capture <= 10 ms: {verdict} ({host_ms:.2f} ms)")
    verdict = "PASS" if model_ms <= 15 else "FAIL"
    print(f"target model frame <= 15 ms more: {verdict} ({model_ms:.2f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from deskpilot import desktop

    state = desktop.up(1280, 800)
    saved = dict(os.environ)
    os.environ.update(state.env)
    try:
        run(args.rounds)
    finally:
        desktop.down(state)
        os.environ.clear()
        os.environ.update(saved)


if __name__ == "__main__":
    main()
