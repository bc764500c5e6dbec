"""Privacy through the whole MCP path: a password field is painted out of an app snapshot and
out of the model's image, and the pixels stored in the vault prove it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from mcp_helpers import memory_client, start_app, text_of
from PIL import Image

from deskpilot.desktop.apps import App

GREY = (128, 128, 128)


@pytest.fixture(scope="module")
def password_dialog(desktop: object) -> Iterator[App]:
    app = start_app(["zenity", "--password", "--title=Unlock"], capture_stdout=True)
    yield app
    app.stop()


def _all_grey(img: Image.Image, region: list[int]) -> bool:
    x, y, w, h = region
    crop = img.convert("RGB").crop((x, y, x + w, y + h))
    colours = crop.getcolors(maxcolors=w * h + 1) or []
    return [c for _, c in colours] == [GREY]


async def test_capture_app_snapshot_paints_the_password_field_out(password_dialog: App) -> None:
    async with memory_client() as client:
        service = client.runtime.ctx.snapshots.service  # type: ignore[attr-defined]
        snap = await client.call_tool("capture_app_snapshot", {"app": password_dialog.pid})
        assert not snap.is_error, text_of(snap)
        data = json.loads(text_of(snap).split("\n\n")[0])
        redaction = data["redaction"]
        assert redaction["applied"] is True and redaction["regionCount"] >= 1, redaction
        stored = Image.open(io.BytesIO(service.read_blob(data["snapshotId"], "image")))
        for region in redaction["imageRegions"]:
            assert region[2] > 0 and region[3] > 0
            assert _all_grey(stored, region), region
        # the rest of the window is not painted over
        assert not _all_grey(stored, [0, 0, stored.width, stored.height])

        # the model's image of the same window keeps the field painted out too
        shot = await client.call_tool("screenshot", {"app": password_dialog.pid})
        assert not shot.is_error, text_of(shot)
        image = next(c for c in shot.content if c.type == "image")
        import base64

        model = Image.open(io.BytesIO(base64.b64decode(image.data)))
        sx = model.width / stored.width
        sy = model.height / stored.height
        for x, y, w, h in redaction["imageRegions"]:
            # sample the middle of the region, scaled into the model frame (JPEG: near-grey)
            px = model.convert("RGB").getpixel((int((x + w / 2) * sx), int((y + h / 2) * sy)))
            assert isinstance(px, tuple)
            assert all(abs(c - 128) <= 12 for c in px[:3]), px
