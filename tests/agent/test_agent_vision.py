"""``vision_read`` on the private desktop: OCR of a state's own frame, with boxes a
coordinate click can use."""

from __future__ import annotations

import asyncio
import re
import shutil

import pytest
from agent_policies import Steps, last_text
from agent_rig import AgentRig
from scripted_model import Request, ScriptedModel, call, final

from deskpilot.desktop import apps

pytestmark = pytest.mark.desktop

PROBE = "Invoice 5319 approved"
_LINE = re.compile(r"^\[(\d+),(\d+),(\d+),(\d+)\]\s+\S+\s+(.*)$", re.M)


def _read_state(request: Request) -> dict[str, object]:
    sid = request.state_id()
    return call("vision_read", state_id=sid) if sid else final("no state to read")


async def test_vision_read_ocrs_the_frame_of_a_state(
    desktop_rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    if "vision_read" not in desktop_rig.agent.local:
        pytest.skip("no OCR (tesseract-ocr) and no vision model on this machine")
    zenity = shutil.which("zenity")
    if zenity is None:
        pytest.skip("zenity is not installed")
    app = await asyncio.to_thread(
        apps.launch_accessible, [zenity, "--info", "--title=Probe", f"--text={PROBE}"]
    )
    try:
        policy = Steps(
            [
                call("get_app_state", app=app.pid),
                _read_state,
                lambda r: final(last_text(r)),
            ]
        )
        scripted_model.set_policy(policy)
        report = await desktop_rig.agent.run_turn("Read the text in the Probe dialog's image.")
    finally:
        app.stop()
    assert report.status == "answered", (report.code, report.message)
    evidence = report.text or ""
    assert evidence.startswith("VISION_READ_OK"), evidence[:300]
    size = re.search(r"image=(\d+)x(\d+)", evidence)
    assert size is not None
    width, height = int(size.group(1)), int(size.group(2))
    # the image is the frame the model's state was shown with (same size as its header says)
    header = desktop_rig.events.of("state")[0].body["header"]
    assert f"image={width}x{height}" in header
    hits = [m for m in _LINE.finditer(evidence) if "5319" in m.group(5)]
    assert hits, evidence
    x, y, w, h = (int(v) for v in hits[0].group(1, 2, 3, 4))
    assert 0 <= x < x + w <= width and 0 <= y < y + h <= height
    assert "Invoice" in hits[0].group(5)
