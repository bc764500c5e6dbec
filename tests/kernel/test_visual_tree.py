"""Visual trees over a real host: an xterm (no accessibility tree) observed, checked and
clicked through the kernel, on the private desktop with Debian's tesseract.

What is real: Xvfb, the host process, xterm with a known output, tesseract, the X PRIMARY
selection a double-click in xterm sets. ``client.sent["execute_action"]`` counts what reached
the host, so "refused before the host" is checked, not assumed.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.client import HostClient
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import TaskContract
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.verification import VisualSpec
from deskpilot.protocol.wire import ClickAction, SetValueAction, TargetSpec, TypeTextAction
from deskpilot.runtime.state_view import tree_read_lines
from deskpilot.runtime.verification import Evidence, verify
from deskpilot.store.db import Database
from deskpilot.vision import ocr_ready
from deskpilot.vision.frames import decode_image
from deskpilot.vision.ocr import block_engine, terminal_engine
from xterm_kit import (
    ARGS,
    COLOURED,
    COLOURED_LINES,
    MARKER,
    WORDS,
    launch_xterm,
    launch_xterm_script,
    primary_selection,
)

from .real_apps import zenity

pytestmark = pytest.mark.desktop


@pytest.fixture
async def backend(
    desktop: vdesk.DesktopState, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[HostBackend]:
    if not ocr_ready():
        pytest.skip("no OCR engine (tesserocr, tesseract-ocr-eng)")
    monkeypatch.setenv(LOCAL_TRUST_ENV, "1")
    b = HostBackend(HostConfig(heartbeat_interval_s=3600.0), heartbeat=False)
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture
async def kernel(backend: HostBackend, tmp_path: Path) -> AsyncIterator[Kernel]:
    k = Kernel(backend, Database(tmp_path / "visual.sqlite3"), flags=Flags({}))
    yield k
    await k.close()


@pytest.fixture
def xterm(desktop: vdesk.DesktopState) -> Iterator[App]:
    app = launch_xterm()
    try:
        yield app
    finally:
        app.stop()


def _client(backend: HostBackend) -> HostClient:
    client = backend.supervisor.client
    assert client is not None and client.alive
    return client


async def _session(kernel: Kernel, pid: int, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for w in await kernel.windows():
            if w.app.pid == pid:
                target = TargetSpec(window_id=w.window_id)
                return await kernel.open_session("agent", TaskContract(), target=target)
        await asyncio.sleep(0.1)
    raise AssertionError(f"no window for pid {pid}")


def _compact(text: str) -> str:
    return "".join(text.split()).casefold()


async def _observed_with(
    kernel: Kernel, sid: str, text: str, timeout: float = 15.0
) -> ObservedState:
    """Observe until the OCR outline shows ``text`` (xterm draws its output after mapping)."""
    deadline = time.monotonic() + timeout
    while True:
        state = await kernel.observe(sid)
        if _compact(text) in _compact(state.observation.tree):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} never showed:\n{state.observation.tree}")
        await asyncio.sleep(0.3)


def _element(state: ObservedState, role: str, text: str) -> int:
    tree = parse_tree(state.observation.tree)
    ids = [e.id for e in tree.elements.values() if e.role == role and e.name == text]
    assert ids, f"no {role} {text!r} in:\n{state.observation.tree}"
    return ids[0]


async def test_an_xterm_is_observed_as_a_visual_tree(kernel: Kernel, xterm: App) -> None:
    sid = await _session(kernel, xterm.pid)
    state = await _observed_with(kernel, sid, WORDS)
    obs = state.observation
    assert obs.tree_read.source == "visual"
    assert obs.tree_version.startswith("visual-")
    assert obs.sensitive_regions == []
    assert "ocr" in obs.timings_ms and "visual" in obs.timings_ms
    # the same outline format as an AT-SPI tree: a window root, blocks, lines, words
    tree = parse_tree(obs.tree)
    assert tree.elements[1].role == "window" and tree.elements[1].depth == 0
    assert obs.element_count == len(tree.elements)
    line = _element(state, "text", WORDS)
    words = [e for e in tree.elements.values() if e.parent == line]
    assert [(e.role, e.name) for e in words] == [("word", w) for w in WORDS.split()]
    assert tree.elements[line].parent is not None
    assert tree.elements[tree.elements[line].parent].role == "block"
    marker = [e for e in tree.elements.values() if _compact(e.name) == _compact(MARKER)]
    assert marker and marker[0].role == "text"
    # each element's box is kept with the state, inside the image
    assert state.visual is not None and obs.image is not None
    assert set(state.visual.bounds) == set(tree.elements)
    assert state.visual.image_size == (obs.image.width, obs.image.height)
    for x, y, w, h in state.visual.bounds.values():
        assert x >= 0 and y >= 0 and w > 0 and h > 0
        assert x + w <= obs.image.width and y + h <= obs.image.height
    # the host bound its own (tree-less) version; the agent reads the visual header line
    assert state.visual.host_tree_version == "t-none"
    assert any(ln.startswith("tree=visual") for ln in tree_read_lines(obs))
    # the same screen, the same version
    again = await kernel.observe(sid)
    assert again.observation.tree_version == obs.tree_version
    assert again.observation.frame_id != obs.frame_id


async def test_an_unchanged_xterm_costs_no_ocr_and_typing_rereads_only_its_rows(
    kernel: Kernel, xterm: App
) -> None:
    sid = await _session(kernel, xterm.pid)
    await _observed_with(kernel, sid, WORDS)
    same = await kernel.observe(sid)  # nothing changed since: the last reading
    assert same.observation.timings_ms["ocr_rows"] == 0
    assert same.observation.tree_read.source == "visual"
    obs = same.observation
    done = await kernel.execute(
        sid, obs.frame_id, obs.tree_version, TypeTextAction(text="typed-9055"), observe_after=True
    )
    assert done.result.dispatched
    state = await _observed_with(kernel, sid, "typed-9055")
    rows = state.observation.timings_ms["ocr_rows"]
    assert state.observation.image is not None
    # the typed row was read again (after the action or now), not the whole window
    post = done.post
    assert post is not None
    read = max(rows, post.observation.timings_ms.get("ocr_rows", 0.0))
    assert 0 < read < state.observation.image.height / 2
    # and the rows above it are still there
    tree = state.observation.tree
    assert _compact(MARKER) in _compact(tree) and WORDS in tree


async def test_a_visual_check_reads_the_xterm_text(kernel: Kernel, xterm: App) -> None:
    sid = await _session(kernel, xterm.pid)
    state = await _observed_with(kernel, sid, WORDS)
    specs = [
        VisualSpec(assertion="text_present", text=MARKER),
        VisualSpec(assertion="text_present", text="bravo charlie"),
        VisualSpec(assertion="text_absent", text="NOT-ON-SCREEN-9"),
        VisualSpec(assertion="text_present", text="NOT-ON-SCREEN-9"),
    ]
    verdicts = await verify(specs, Evidence(state, [], 0.0), allow_external_readback=False)
    assert [v.passed for v in verdicts] == [True, True, True, False]
    assert all(v.evidence["source"] == "ocr" for v in verdicts)
    assert MARKER.split("-")[0].casefold() in str(verdicts[0].evidence["seenIn"]).casefold()
    # a tree-less state without the kernel's outline (a capture) is read from its screenshot
    captured = await kernel.capture(sid)
    assert captured.visual is None and captured.observation.tree_read.source != "visual"
    assert captured.observation.element_count <= 1
    (v,) = await verify(specs[:1], Evidence(captured, [], 0.0), allow_external_readback=False)
    assert v.passed is True and v.evidence["source"] == "ocr"


async def test_text_on_inverted_and_coloured_backgrounds_is_read(
    kernel: Kernel, desktop: vdesk.DesktopState
) -> None:
    app = launch_xterm_script(COLOURED)
    try:
        sid = await _session(kernel, app.pid)
        state = await _observed_with(kernel, sid, COLOURED_LINES[0])
        tree = parse_tree(state.observation.tree)
        lines = {e.name for e in tree.elements.values() if e.role == "text"}
        for line in COLOURED_LINES:  # each whole line, its plain words and its coloured ones
            assert line in lines, state.observation.tree
        specs = [
            VisualSpec(assertion="text_present", text="INVERTED WORDS"),
            VisualSpec(assertion="text_present", text="BLUEBG"),
            VisualSpec(assertion="text_present", text="RED BOLD"),
        ]
        verdicts = await verify(specs, Evidence(state, [], 0.0), allow_external_readback=False)
        assert [v.passed for v in verdicts] == [True, True, True]
    finally:
        app.stop()


_WORDS = [
    "amber",
    "basin",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
]


def _lines(tree: str) -> list[str]:
    """The outline's text lines, in order (what an agent reads of a terminal)."""
    return [e.name for e in parse_tree(tree).elements.values() if e.role == "text"]


async def test_reading_row_by_row_stays_what_a_fresh_full_read_sees(
    kernel: Kernel, desktop: vdesk.DesktopState
) -> None:
    """One long-lived kernel reads a bash session command after command (only the rows that
    changed are read again, with the process's glyphs); after each, a new engine with no
    glyphs reads the same screenshot whole: the two outlines must be the same."""
    app = launch_xterm_script("exec bash --norc --noprofile")
    rng = random.Random(4711)
    try:
        sid = await _session(kernel, app.pid)
        state = await _observed_with(kernel, sid, "bash-5.2#")
        for step in range(8):
            words = " ".join(rng.sample(_WORDS, 4))
            obs = state.observation
            done = await kernel.execute(
                sid,
                obs.frame_id,
                obs.tree_version,
                TypeTextAction(text=f"echo {words}\n"),
                observe_after=True,  # as the MCP server does: a frame mid-output, too
            )
            assert done.result.dispatched, done.result
            state = await _observed_with(kernel, sid, f"echo {words}")
            for _ in range(50):  # bash has echoed the words and shown its prompt again
                lines = _lines(state.observation.tree)
                if lines[-2:] == [words, "bash-5.2#"]:
                    break
                await asyncio.sleep(0.2)
                state = await kernel.observe(sid)
            assert state.png is not None
            fresh = terminal_engine()
            try:
                read = await asyncio.to_thread(fresh.recognize, decode_image(state.png))
                grid = fresh.glyphs.grid if fresh.glyphs is not None else None
            finally:
                fresh.close()
            # the long-lived engine cuts the frame's cells where a fresh whole read does (a
            # band fits a wrong cell height too: rows further down were cut mid-glyph; it
            # failed from step 2 when bands were read by the grid of a frame of 2 rows)
            kept = block_engine().glyphs
            assert grid is not None and kept is not None
            if step >= 2:  # a prompt and a line or two fit several cell heights alike
                assert (kept.grid.height, kept.grid.top) == (grid.height, grid.top), step
            assert _lines(state.observation.tree) == [ln.text for ln in read], (
                f"step {step}: the long-lived reading drifted from a fresh one"
            )
    finally:
        app.stop()


async def test_a_double_click_on_an_ocr_word_selects_that_word(
    kernel: Kernel, backend: HostBackend, xterm: App, desktop: vdesk.DesktopState
) -> None:
    sid = await _session(kernel, xterm.pid)
    state = await _observed_with(kernel, sid, WORDS)
    obs = state.observation
    bravo = _element(state, "word", "bravo")
    client = _client(backend)
    done = await kernel.execute(
        sid,
        obs.frame_id,
        obs.tree_version,
        ClickAction(element_id=bravo, count=2),
        observe_after=True,
    )
    assert done.result.dispatched
    assert client.sent["execute_action"] == 1
    # the host got a click on a point: the centre of the word's box, in screen pixels
    assert state.visual is not None
    x, y, w, h = state.visual.bounds[bravo]
    aimed = done.result.target_bounds
    assert aimed is not None and (aimed.width, aimed.height) == (1, 1)
    origin = obs.window.bounds
    assert abs(aimed.x - (origin.x + x + w // 2)) <= 1
    assert abs(aimed.y - (origin.y + y + h // 2)) <= 1
    # xterm's double-click selects the word under the pointer: PRIMARY holds it
    display = os.environ.get("DISPLAY") or desktop.env["DISPLAY"]
    assert await asyncio.to_thread(primary_selection, display) == "bravo"
    # the post-action state is visual too, and the current frame
    post = done.post
    assert post is not None and post.observation.tree_read.source == "visual"
    assert post.visual is not None
    # the selected word is drawn inverted: still read, in its line
    selected = await _observed_with(kernel, sid, WORDS)
    assert WORDS in {e.name for e in parse_tree(selected.observation.tree).elements.values()}


async def test_what_needs_an_accessibility_element_is_refused_before_the_host(
    kernel: Kernel, backend: HostBackend, xterm: App
) -> None:
    sid = await _session(kernel, xterm.pid)
    state = await _observed_with(kernel, sid, WORDS)
    obs = state.observation
    line = _element(state, "text", WORDS)
    client = _client(backend)
    with pytest.raises(DeskpilotError) as info:
        await kernel.execute(
            sid, obs.frame_id, obs.tree_version, SetValueAction(element_id=line, value="x")
        )
    assert info.value.code is ErrorCode.UNSUPPORTED_ACTION
    assert info.value.details["treeSource"] == "visual"
    assert client.sent["execute_action"] == 0


@pytest.fixture
def info_dialog(desktop: vdesk.DesktopState) -> Iterator[App]:
    yield from zenity("--info", "--title", "visual test", "--text", "hello")


async def test_a_window_with_an_accessibility_tree_is_not_read_by_ocr(
    kernel: Kernel, info_dialog: App
) -> None:
    sid = await _session(kernel, info_dialog.pid)
    deadline = time.monotonic() + 15.0
    state = await kernel.observe(sid)
    while state.observation.element_count <= 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.3)
        state = await kernel.observe(sid)
    obs = state.observation
    assert obs.element_count > 1
    assert obs.tree_read.source == "accessibility"
    assert not obs.tree_version.startswith("visual-")
    assert state.visual is None and "ocr" not in obs.timings_ms


async def test_a_window_lying_over_part_of_the_xterm_is_not_read_as_its_text(
    kernel: Kernel, xterm: App
) -> None:
    """X captures a window's screen area, so the screenshot of a covered xterm shows the
    window on top there; its words used to appear in the xterm's outline as the xterm's own
    (and a click on them was refused as covered). The covered part is said and left out."""
    sid = await _session(kernel, xterm.pid)
    await _observed_with(kernel, sid, WORDS)
    path = shutil.which("xterm")
    assert path is not None  # the fixture's xterm runs
    words = "ZEBRA QUOKKA WOMBAT"
    cover = launch(
        [path, "-geometry", "30x3+560+360", *ARGS[2:], "-e", "sh", "-c", f"echo {words}; sleep 600"]
    )
    try:
        # painted: its own outline (it has no accessibility tree either) shows its words
        await _observed_with(kernel, await _session(kernel, cover.pid), words)
        state = await kernel.observe(sid)
        obs = state.observation
        (region,) = obs.covered_regions
        assert (region.x, region.y) == (560, 360) and region.width > 50, region
        assert obs.tree_read.source == "visual"
        text = _compact(obs.tree)
        assert _compact(WORDS) in text and _compact(MARKER) in text, obs.tree
        for word in ("ZEBRA", "QUOKKA", "WOMBAT"):
            assert word.casefold() not in text, obs.tree
        (line,) = [ln for ln in tree_read_lines(obs) if ln.startswith("covered=")]
        assert line.startswith("covered=1 region") and "left out of this outline" in line
        assert state.visual is not None
        root = (0, 0, obs.image.width, obs.image.height) if obs.image else None

        def inside(x: float, y: float) -> bool:
            return region.x <= x < region.x + region.width and (
                region.y <= y < region.y + region.height
            )

        assert not any(
            inside(x + w / 2, y + h / 2)
            for x, y, w, h in state.visual.bounds.values()
            if (x, y, w, h) != root
        ), state.visual.bounds
    finally:
        cover.stop()
    # uncovered again: nothing said, the xterm's own text as before
    deadline = time.monotonic() + 15
    while (state := await kernel.observe(sid)).observation.covered_regions:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.2)
    assert not any(ln.startswith("covered=") for ln in tree_read_lines(state.observation))
