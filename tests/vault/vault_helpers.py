"""Helpers shared by the vault tests: a clock tests can move, PNG makers, session rows."""

from __future__ import annotations

import io
import time

from PIL import Image

from deskpilot.protocol.wire import AppIdentity, Rect, WindowInfo
from deskpilot.store.db import Database
from deskpilot.vault.retention import VaultPolicy
from deskpilot.vault.service import SnapshotService
from deskpilot.vault.store import Vault


class Clock:
    """Epoch seconds that move only when told to."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_png(
    width: int, height: int, color: tuple[int, int, int] = (20, 160, 40), *, mode: str = "RGB"
) -> bytes:
    img = Image.new(mode, (width, height), color if mode == "RGB" else (*color, 255))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def make_noise_png(width: int, height: int, seed: int = 1) -> bytes:
    """A PNG with texture (compresses like a real screenshot, not like a flat colour)."""
    import random

    rnd = random.Random(seed)
    img = Image.new("RGB", (width, height), (240, 240, 240))
    from PIL import ImageDraw

    draw = ImageDraw.Draw(img)
    for _ in range(400):
        x, y = rnd.randrange(width), rnd.randrange(height)
        draw.rectangle(
            (x, y, x + rnd.randrange(4, 200), y + rnd.randrange(4, 40)),
            fill=(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)),
        )
        draw.text((x, y), "deskpilot text sample", fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def decode(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


def window(width: int, height: int, app: AppIdentity | None = None) -> WindowInfo:
    return WindowInfo(
        window_id="0x1",
        title="Editor",
        bounds=Rect(x=100, y=50, width=width, height=height),
        app=app or AppIdentity(executable="mousepad", pid=1234),
    )


def add_session(db: Database, session_id: str) -> None:
    now = time.time()
    db.execute(
        "INSERT INTO sessions (id, agent_session_id, mode, state, contract_json, created_at, "
        "updated_at) VALUES (?, 'agent-1', 'atomic', 'observing', '{}', ?, ?)",
        (session_id, now, now),
    )


def fixed_service(db: Database, vault: Vault, clock: Clock, **policy: object) -> SnapshotService:
    return SnapshotService(db, vault, VaultPolicy(**policy), clock=clock)  # type: ignore[arg-type]
