"""The runtime's observation path against the recording fake kernel: the model frame paints
secure regions out unless ``redactSensitiveContent`` is off (in window coordinates, scaled to
the capture), and a screenshot never makes the agent's state stale."""

from __future__ import annotations

import io
import json
import re

import pytest
from fake_kernel import FakeKernel, Screen, solid_png
from PIL import Image

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Capabilities, ClickAction, Rect, WindowInfo
from deskpilot.runtime.call import ModelFrame, ToolOutcome
from deskpilot.runtime.runtime import Runtime, RuntimeConfig
from deskpilot.store.settings import SettingsModel

AGENT = "a"
LOGIN = """\
- dialog "Log in" [1]
  - label "Password" [2]
  - passwordField [focused] [secure] [3]
  - button "OK" [4]"""
#: the password field, in window coordinates
SECRET = Rect(x=100, y=100, width=200, height=60)
COLOR = (30, 160, 60)
GREY = (128, 128, 128)


def _rgb(frame: ModelFrame, xy: tuple[int, int]) -> tuple[int, int, int]:
    img = Image.open(io.BytesIO(frame.jpeg)).convert("RGB")
    r, g, b = img.getpixel(xy)
    return r, g, b


def _near(a: tuple[int, ...], b: tuple[int, ...], tol: int = 12) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a, b, strict=True))


def _source(scale: int, xy: tuple[int, int]) -> tuple[int, int, int]:
    src = Image.open(io.BytesIO(solid_png(400 * scale, 300 * scale, COLOR))).convert("RGB")
    r, g, b = src.getpixel(xy)
    return r, g, b


def _fake(redact: bool, scale: int) -> FakeKernel:
    screen = Screen(
        LOGIN,
        app="pinentry",
        title="Log in",
        width=400,
        height=300,
        color=COLOR,
        scale=scale,
        sensitive=(SECRET,),
    )
    return FakeKernel(screen, settings_model=SettingsModel(redact_sensitive_content=redact))


def _check(frame: ModelFrame | None, scale: int, redact: bool) -> None:
    assert frame is not None and (frame.width, frame.height) == (400 * scale, 300 * scale)
    inside = (scale * (SECRET.x + SECRET.width // 2), scale * (SECRET.y + SECRET.height // 2))
    edge = (scale * (SECRET.x + SECRET.width) - 2, scale * (SECRET.y + SECRET.height) - 2)
    outside = (scale * (SECRET.x + SECRET.width) + 10, inside[1])
    assert _near(_rgb(frame, outside), _source(scale, outside))
    for xy in (inside, edge):
        if redact:
            assert _near(_rgb(frame, xy), GREY) and not _near(_rgb(frame, xy), _source(scale, xy))
        else:
            assert _near(_rgb(frame, xy), _source(scale, xy))


async def _call(rt: Runtime, tool: str, **args: object) -> ToolOutcome:
    out = await rt.call(tool, args, agent_session=AGENT)
    assert not out.is_error, out.text
    return out


@pytest.mark.parametrize("scale", [1, 2])
@pytest.mark.parametrize("redact", [True, False])
async def test_get_app_state_paints_secure_regions_out_only_when_redacting(
    redact: bool, scale: int
) -> None:
    fake = _fake(redact, scale)
    rt = Runtime(fake, snapshots=None, config=RuntimeConfig())
    try:
        out = await _call(rt, "get_app_state", app="pinentry")
        _check(out.image, scale, redact)
        assert f"image={400 * scale}x{300 * scale}" in out.text
    finally:
        await rt.close()


@pytest.mark.parametrize("redact", [True, False])
async def test_a_screenshot_is_redacted_alike_and_leaves_the_state_usable(redact: bool) -> None:
    fake = _fake(redact, 2)
    rt = Runtime(fake, snapshots=None, config=RuntimeConfig())
    try:
        state = await _call(rt, "get_app_state", app="pinentry")
        m = re.search(r"^state_id=(\S+)$", state.text, re.M)
        assert m is not None
        shot = await _call(rt, "screenshot", app="pinentry")
        _check(shot.image, 2, redact)
        assert "state_id=" not in shot.text and not shot.diagnostic.state_id_issued
        await _call(rt, "click", state_id=m.group(1), element_id=4)
        (execute,) = fake.trace("execute")
        # the capture did not replace the frame: the click went out on it, nothing healed
        assert execute.frame_id == "f1" and execute.refused_by is None
        assert execute.action == ClickAction(element_id=4)
        assert fake.methods("observe", "capture", "execute") == ["observe", "capture", "execute"]
    finally:
        await rt.close()


class _UntrustedHost(FakeKernel):
    async def capabilities(self) -> Capabilities:
        raise DeskpilotError(ErrorCode.NATIVE_HOST_UNTRUSTED, "the host is not trusted")

    async def windows(self) -> list[WindowInfo]:
        raise DeskpilotError(ErrorCode.NATIVE_HOST_UNTRUSTED, "the host is not trusted")


async def test_diagnose_names_the_trust_fix_when_the_host_is_untrusted() -> None:
    """The advice follows the failing check: an untrusted host is not a missing display."""
    rt = Runtime(_UntrustedHost(Screen(LOGIN)), snapshots=None, config=RuntimeConfig())
    try:
        out = await rt.call("diagnose_native_host", {}, agent_session=AGENT)
        data = json.loads(out.text.split("\n\n")[0])
        assert [c["code"] for c in data["checks"]] == ["native_host_untrusted"] * 2
        assert any("DESKPILOT_HOST_LOCAL_TRUST=1" in a for a in data["advice"])
        assert not any("deskpilot desktop up" in a for a in data["advice"])
    finally:
        await rt.close()
