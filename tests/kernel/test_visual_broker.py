"""Visual (OCR) frames through the kernel: how an action on one is rated and recorded, what is
refused before the host, and a frame store that a pause while OCR reads is not undone in.

What is real: the kernel, its SQLite ledger and timeline, tesseract reading an image drawn
with Pillow; the desktop is the recorded one (tests/kernel/backends.py) serving a window
with no accessibility tree (only its root) and that image as its screenshot.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from deskpilot.kernel import Kernel, visual_tree
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.frames import CurrentFrames
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import EventType, RiskLevel
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import ClickAction, InvokeElementAction, Point
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.vision import OcrEngine, ocr_ready

from .backends import RecordedBackend, screen

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def chat_png() -> bytes:
    """A chat window's pixels: a message and a "Send" button's label, 800x600 like the
    recorded window's bounds."""
    font = ImageFont.truetype(str(FONT), 28)
    img = Image.new("RGB", (800, 600), "white")
    d = ImageDraw.Draw(img)
    d.text((60, 60), "Message to Ada", font=font, fill="black")
    d.text((60, 500), "Send", font=font, fill="black")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def backend() -> RecordedBackend:
    if not ocr_ready() or not FONT.is_file():
        pytest.skip("no OCR engine (tesserocr, tesseract-ocr-eng) or no DejaVu font")
    return RecordedBackend(default=screen('- window "Chat" [1]\n'), png=chat_png())


@pytest.fixture
async def kernel(db: Database, backend: RecordedBackend) -> AsyncIterator[Kernel]:
    k = Kernel(backend, db, flags=Flags({}))
    yield k
    await k.close()


def _send(state: ObservedState) -> int:
    assert state.observation.tree_read.source == "visual", state.observation.tree
    tree = parse_tree(state.observation.tree)
    ids = [e.id for e in tree.elements.values() if e.role == "text" and e.name == "Send"]
    assert ids, state.observation.tree
    return ids[0]


def _requested(kernel: Kernel, sid: str) -> list[dict[str, object]]:
    return [e.payload for e in kernel.sessions.events(sid) if e.type is EventType.ACTION_REQUESTED]


async def test_a_click_on_an_ocr_word_is_an_unknown_target_and_its_point_is_recorded(
    kernel: Kernel, backend: RecordedBackend, db: Database
) -> None:
    sid = await kernel.open_session("agent")
    state = await kernel.observe(sid)
    send = _send(state)
    obs = state.observation
    done = await kernel.execute(
        sid, obs.frame_id, obs.tree_version, InvokeElementAction(element_id=send), action_id="a1"
    )
    # rated as a click on a surface nothing is known of: OCR'd "Send" may be a send button
    assert done.risk >= RiskLevel.L2 and "visual_tree" in done.signals
    assert backend.executed == [(sid, "click")]
    # the ledger keeps the request; its action_requested event says what was sent
    row = ActionRepository(db).get("a1")
    assert row is not None and row.kind == "invoke_element" and row.target_kind == "unknown"
    assert state.visual is not None
    centre = visual_tree.centre(state.visual, send)
    (payload,) = _requested(kernel, sid)
    assert payload["kind"] == "invoke_element" and payload["targetKind"] == "unknown"
    assert payload["dispatched"] == {"kind": "click", "point": {"x": centre.x, "y": centre.y}}
    # a point of the image is as unknown, and sent unchanged (nothing rewritten to record)
    again = await kernel.observe(sid)
    point = ClickAction(point=Point(x=0.2, y=0.2))
    done = await kernel.execute(
        sid, again.observation.frame_id, again.observation.tree_version, point
    )
    assert done.risk >= RiskLevel.L2 and "visual_tree" in done.signals
    assert "dispatched" not in _requested(kernel, sid)[-1]


async def test_focus_on_an_ocr_word_is_refused_before_the_policy_and_the_host(
    kernel: Kernel, backend: RecordedBackend, db: Database
) -> None:
    sid = await kernel.open_session("agent")
    state = await kernel.observe(sid)
    obs = state.observation
    focus = InvokeElementAction(element_id=_send(state), action="focus")
    with pytest.raises(DeskpilotError) as info:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, focus, action_id="a1")
    assert info.value.code is ErrorCode.UNSUPPORTED_ACTION
    assert backend.executed == [] and ActionRepository(db).get("a1") is None
    assert _requested(kernel, sid) == []


def _gated(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event, list[bool]]:
    """OCR that waits, once armed, until the test lets it go: (reading, go, armed)."""
    real = visual_tree.outlined
    reading, go, armed = asyncio.Event(), asyncio.Event(), [False]

    async def outlined(state: ObservedState, engine: OcrEngine | None = None) -> ObservedState:
        if armed[0]:
            reading.set()
            await go.wait()
        return await real(state, engine)

    monkeypatch.setattr(visual_tree, "outlined", outlined)
    return reading, go, armed


async def test_a_pause_while_ocr_reads_an_observation_is_not_undone(
    kernel: Kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    reading, go, armed = _gated(monkeypatch)
    armed[0] = True
    sid = await kernel.open_session("agent")
    observing = asyncio.ensure_future(kernel.observe(sid))
    await reading.wait()
    await kernel.pause(sid)
    go.set()
    state = await observing
    assert state.observation.tree_read.source == "visual"  # read, and answered
    assert kernel.broker.frames.get(sid) is None  # but not the current frame again
    await kernel.resume(sid)
    obs = state.observation
    with pytest.raises(DeskpilotError) as info:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, ClickAction(element_id=1))
    assert info.value.code is ErrorCode.STALE_FRAME


async def test_a_pause_while_ocr_reads_a_post_action_state_is_not_undone(
    kernel: Kernel, backend: RecordedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    reading, go, armed = _gated(monkeypatch)
    sid = await kernel.open_session("agent")
    state = await kernel.observe(sid)
    obs = state.observation
    armed[0] = True  # the post-action state's OCR waits
    click = ClickAction(element_id=_send(state))
    acting = asyncio.ensure_future(
        kernel.execute(sid, obs.frame_id, obs.tree_version, click, observe_after=True)
    )
    await reading.wait()
    await kernel.pause(sid)
    go.set()
    done = await acting
    assert backend.executed == [(sid, "click")]
    assert done.post is not None and done.post.observation.tree_read.source == "visual"
    assert kernel.broker.frames.get(sid) is None


def test_the_frame_store_keeps_a_put_only_when_no_drop_came_since() -> None:
    frames = CurrentFrames()
    state = ObservedState(screen('- window "Chat" [1]\n'), None)
    since = frames.generation("s1")
    frames.drop("s2")  # another session's drop is not this one's
    assert frames.put("s1", state, since=since) and frames.get("s1") is state
    for dropped in ("s1", None):  # this one's, or every frame
        since = frames.generation("s1")
        frames.drop(dropped)
        assert not frames.put("s1", state, since=since) and frames.get("s1") is None
    assert frames.put("s1", state) and frames.get("s1") is state  # no note: always kept
