"""Frames of a PipeWire video stream, kept as they come, and given out as PNG.

Mutter hands a screen cast out as a PipeWire node; GStreamer's ``pipewiresrc`` (Debian's
``gstreamer1.0-pipewire``) is the well-kept reader of it. A :class:`FrameStream` keeps one
``gst-launch-1.0 pipewiresrc path=NODE ! videoconvert ! video/x-raw,format=RGBA,… ! fdsink``
running for the life of a session, writing raw frames of a fixed size into a pipe; a thread
reads them and keeps the last. A frame is then the last one Mutter sent (it sends one when
the picture changes), encoded to PNG here — not a new process and a new negotiation for
every frame, which took ~100 ms for a window and ~490 ms for the whole screen (measured:
docs/benchmarks.md, "Wayland").

The frames' size is fixed to the stream's (the desktop's size): a monitor stream is that
size, and Mutter's window stream is too — the window is painted into its top-left corner
with its client-side shadow around it. The window itself is the part that is fully opaque
(:func:`window_box`), and that is where its accessible objects' coordinates (relative to
the window, under Wayland) start.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import threading
import time
from typing import Final

from PIL import Image

from deskpilot.protocol.errors import DeskpilotError, ErrorCode

#: how long the first frame may take: a process start and a stream negotiation
FIRST_FRAME_TIMEOUT_S: Final = 10.0
#: zlib level of the PNG given out (as the X11 capture's: speed over size)
PNG_LEVEL: Final = 1


class FrameStream:
    """The running pipeline of one PipeWire node and the last frame it gave (see the module
    docstring). ``close`` ends the pipeline."""

    def __init__(self, node: int, size: tuple[int, int], env: dict[str, str]) -> None:
        gst = shutil.which("gst-launch-1.0")
        if gst is None:
            raise DeskpilotError(
                ErrorCode.CAPTURE_FAILED,
                "gst-launch-1.0 is not installed: install gstreamer1.0-tools and "
                "gstreamer1.0-pipewire (scripts/run installs them on Debian)",
            )
        self.node = node
        self.size = size
        width, height = size
        self._frame_bytes = width * height * 4
        read_fd, write_fd = os.pipe()
        caps = f"video/x-raw,format=RGBA,width={width},height={height}"
        argv = [gst, "-q", "pipewiresrc", f"path={node}", "!", "videoconvert", "!"]
        argv += ["videoscale", "!", caps, "!", "fdsink", f"fd={write_fd}", "sync=false"]
        try:
            self._proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(write_fd,),
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
        self._pipe = os.fdopen(read_fd, "rb", buffering=0)
        self._lock = threading.Lock()
        self._got = threading.Condition(self._lock)
        self._last: bytes | None = None
        self._count = 0
        self._ended = False
        self._reader = threading.Thread(target=self._read, name=f"pipewire-{node}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = bytearray()
        while True:
            try:
                chunk = self._pipe.read(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while len(buf) >= self._frame_bytes:
                frame = bytes(buf[: self._frame_bytes])
                del buf[: self._frame_bytes]
                with self._got:
                    self._last = frame
                    self._count += 1
                    self._got.notify_all()
        with self._got:
            self._ended = True
            self._got.notify_all()

    @property
    def count(self) -> int:
        """How many frames came so far (a caller waiting for a change compares it)."""
        with self._lock:
            return self._count

    def raw(self, timeout: float = FIRST_FRAME_TIMEOUT_S, *, after: int = 0) -> bytes:
        """The last frame's RGBA bytes, once more than ``after`` frames came (at most
        ``timeout`` s); blocking."""
        deadline = time.monotonic() + timeout
        with self._got:
            while self._count <= after and not self._ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._got.wait(left)
            if self._last is not None and self._count > after:
                return self._last
            if self._last is not None and self._ended:
                return self._last
        raise DeskpilotError(
            ErrorCode.CAPTURE_FAILED,
            f"no frame from PipeWire node {self.node} within {timeout:g} s"
            + (f": {self._stderr()}" if self._ended else ""),
            retryable=True,
        )

    def png(self, timeout: float = FIRST_FRAME_TIMEOUT_S, *, after: int = 0) -> bytes:
        """The last frame as PNG bytes (RGBA: a window stream's shadow and the rest around
        the window are transparent); blocking."""
        img = Image.frombuffer("RGBA", self.size, self.raw(timeout, after=after))
        out = io.BytesIO()
        img.save(out, "PNG", compress_level=PNG_LEVEL)
        return out.getvalue()

    def _stderr(self) -> str:
        if self._proc.poll() is None or self._proc.stderr is None:
            return "the pipeline ended"
        text = self._proc.stderr.read().decode(errors="replace").strip()
        return text[-300:] or f"GStreamer exited with {self._proc.returncode}"

    def close(self) -> None:
        """End the pipeline (its reader ends with it)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(2)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        with contextlib.suppress(OSError):
            self._pipe.close()
        self._reader.join(2)
        if self._proc.stderr is not None:
            self._proc.stderr.close()


def window_box(png: bytes) -> tuple[int, int, int, int] | None:
    """Where the window lies in a window stream's frame: the box (x, y, width, height) of its
    fully opaque pixels (its shadow is translucent, the rest transparent); None when nothing
    is opaque (the window is not drawn yet)."""
    with Image.open(io.BytesIO(png)) as img:
        if img.mode != "RGBA":
            return (0, 0, img.width, img.height)
        solid = img.getchannel("A").point(lambda v: 255 if v == 255 else 0)
        box = solid.getbbox()
    if box is None:
        return None
    x0, y0, x1, y1 = box
    return (x0, y0, x1 - x0, y1 - y0)
