"""The live view in a real browser, on the private desktop: frames that change when the
calculator's display changes, the frame rate and latency, no captures once nobody watches,
password fields painted out (and not, with redactSensitiveContent off), the pointer and the
element the agent acted on outlined.

Everything is real: a ``deskpilot ui`` subprocess (which spawns its own host process),
Playwright on Debian's Chromium, gnome-calculator and zenity on Xvfb. The agent is a real
kernel over its own host, run on a background thread's event loop (Playwright's sync API owns
the test's thread); it shares the session's data dir, so its ledger rows are the ones the
dashboard reads. The password is typed through deskpilot's host client directly: the kernel
would refuse (typing credential text is L4), which is right, and not what this test is about.
"""

from __future__ import annotations

import asyncio
import base64
import io
import shutil
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from PIL import Image, ImageChops

from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.config import HostConfig
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import (
    ClickAction,
    ExecuteAction,
    PressKeyAction,
    Rect,
    TargetSpec,
    TypeTextAction,
    WindowInfo,
)
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.settings import Settings

from .uikit import UiServer, shot, start_ui

pytestmark = [pytest.mark.desktop, pytest.mark.chromium]

T = TypeVar("T")
GREY = 128


# ------------------------------------------------------------------ the parts


class Agent:
    """A kernel and a raw host client over one host, on their own thread and event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.backend = HostBackend(HostConfig(heartbeat_interval_s=3600.0), heartbeat=False)
        self.kernel: Kernel = self.run(self._kernel())

    async def _kernel(self) -> Kernel:
        return Kernel(self.backend, Database(), flags=Flags({}))

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        async def shut() -> None:
            await self.kernel.close()
            await self.backend.close()

        try:
            self.run(shut())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    def windows(self) -> list[WindowInfo]:
        return self.run(self.backend.list_windows())

    def window_of(self, pid: int) -> WindowInfo:
        def found() -> WindowInfo | None:
            return next((w for w in self.windows() if w.app.pid == pid and w.visible), None)

        window: WindowInfo = wait_for(found, 20, "the app's window")
        return window

    def click_button(self, session: str, app: App, name: str) -> str:
        """Click the app's button ``name`` through the kernel (the agent's path); returns the
        ledger's action id."""

        async def click() -> str:
            state = await self.kernel.observe(
                session, TargetSpec(pid=app.pid), include_screenshot=False
            )
            obs = state.observation
            tree = parse_tree(obs.tree)
            buttons = [  # GTK's calculator names a digit twice: "7 7"
                e
                for e in tree.elements.values()
                if e.key == "button" and (e.name or "").split(" ")[0] == name
            ]
            assert buttons, f"no button {name!r} in:\n{obs.tree}"
            button = buttons[0]
            aid = f"live-{name}-{time.monotonic_ns()}"
            await self.kernel.execute(
                session,
                obs.frame_id,
                obs.tree_version,
                ClickAction(element_id=button.id),
                action_id=aid,
            )
            return aid

        return self.run(click())

    def type_password(self, app: App, text: str) -> tuple[WindowInfo, list[Rect]]:
        """Type into the app's password field through the host client (no kernel); returns
        the window and the field's sensitive regions (window coordinates)."""

        async def typed() -> tuple[WindowInfo, list[Rect]]:
            state = await self.backend.observe(
                "typist", TargetSpec(pid=app.pid), include_screenshot=False
            )
            obs = state.observation
            field = next(
                e for e in parse_tree(obs.tree).elements.values() if e.key == "passwordfield"
            )
            await self.backend.execute(
                ExecuteAction(
                    id=0,
                    session_id="typist",
                    frame_id=obs.frame_id,
                    tree_version=obs.tree_version,
                    action=TypeTextAction(text=text, element_id=field.id),
                )
            )
            after = await self.backend.observe(
                "typist", TargetSpec(pid=app.pid), include_screenshot=False
            )
            return after.observation.window, list(after.observation.sensitive_regions)

        return self.run(typed())


def warp_pointer(x: int, y: int) -> None:
    """Move the pointer on the private desktop (the person's hand, as far as the view is
    concerned)."""
    from Xlib import display

    d = display.Display()
    try:
        d.screen().root.warp_pointer(x, y)
        d.sync()
    finally:
        d.close()


def wait_for(predicate: Callable[[], T | None], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s")


def live_state(page: Any) -> dict[str, Any]:
    state: dict[str, Any] = page.evaluate("window.deskpilotLive || {}")
    return state


def frames_shown(page: Any, at_least: int, timeout: float = 30.0) -> dict[str, Any]:
    return wait_for(
        lambda: (s := live_state(page)) and s.get("shown", 0) >= at_least and s,
        timeout,
        f"{at_least} frames shown",
    )


def frame_image(page: Any) -> tuple[int, Image.Image]:
    """The frame the page shows now (the <img>'s own data), with its number."""
    src: str = page.eval_on_selector("#live-frame", "img => img.src")
    number = int(live_state(page)["last"]["n"])
    data = base64.b64decode(src.split(",", 1)[1])
    return number, Image.open(io.BytesIO(data)).convert("RGB")


def newer_frame(page: Any, after: int, timeout: float = 10.0) -> tuple[int, Image.Image]:
    wait_for(
        lambda: (live_state(page).get("last") or {}).get("n", 0) > after,
        timeout,
        f"a frame after {after}",
    )
    return frame_image(page)


def stats(page: Any, base_url: str) -> dict[str, Any]:
    response = page.context.request.get(f"{base_url}/live/stats")
    assert response.ok, response.status
    found: dict[str, Any] = response.json()
    return found


def grey_share(image: Image.Image, box: tuple[int, int, int, int]) -> float:
    """The share of pixels in ``box`` within a JPEG step or two of the redaction grey."""
    crop = image.crop(box).convert("L")
    values = crop.tobytes()
    return sum(1 for v in values if abs(v - GREY) <= 6) / len(values)


def inset(r: Rect, origin: tuple[int, int], by: int = 3) -> tuple[int, int, int, int]:
    x, y = r.x - origin[0], r.y - origin[1]
    return (x + by, y + by, x + r.width - by, y + r.height - by)


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def ui_server(dp_desktop: Any) -> Iterator[UiServer]:
    """The dashboard, started once the private desktop is up (it inherits its display)."""
    server = start_ui()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def agent(dp_desktop: Any) -> Iterator[Agent]:
    a = Agent()
    try:
        yield a
    finally:
        a.close()


@pytest.fixture(scope="module")
def calculator(dp_desktop: Any) -> Iterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = launch_accessible(["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def password_dialog(dp_desktop: Any) -> Iterator[App]:
    path = shutil.which("zenity")
    if path is None:
        pytest.skip("zenity is not installed")
    app = launch_accessible([path, "--password", "--title=Unlock"])
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def redaction_restored(dp_desktop: Any) -> Iterator[Database]:
    db = Database()
    yield db
    Settings.update(db, redact_sensitive_content=True)


# ------------------------------------------------------------------ tests


def test_the_live_view_shows_a_frame_that_changes_when_the_calculators_display_changes(
    logged_in: Any, ui_server: UiServer, agent: Agent, calculator: App
) -> None:
    calc = agent.window_of(calculator.pid)
    page = logged_in
    page.goto(f"{ui_server.base_url}/live?target={calc.window_id}")
    assert page.locator("#live-target").input_value() == calc.window_id
    frames_shown(page, 3)
    session = agent.run(
        agent.kernel.open_session("live-view-test", target=TargetSpec(pid=calculator.pid))
    )

    # the display before: wait until two frames in a row agree (a window still painting)
    def steady() -> tuple[int, Image.Image] | None:
        n, a = frame_image(page)
        m, b = newer_frame(page, n)
        return (m, b) if ImageChops.difference(a, b).getbbox() is None else None

    before_n, before = wait_for(steady, 15, "a steady calculator")
    assert before.size == (calc.bounds.width, calc.bounds.height)

    aid = agent.click_button(session, calculator, "7")
    agent.click_button(session, calculator, "7")

    # the display area (the upper part of the window) changes in a later frame
    display = (0, 0, calc.bounds.width, int(calc.bounds.height * 0.45))

    def display_changed() -> tuple[int, Image.Image] | None:
        n, now = newer_frame(page, before_n)
        box = ImageChops.difference(before.crop(display), now.crop(display)).getbbox()
        return (n, now) if box is not None else None

    after_n, _ = wait_for(display_changed, 10, "the display to change in the live view")
    assert after_n > before_n

    # what the agent clicked is outlined: the button's rectangle, as the ledger recorded it
    row = ActionRepository(Database()).get(aid)
    assert row is not None and row.outcome is not None
    aimed = Rect.model_validate(row.outcome["target_bounds"])
    assert 10 <= aimed.width <= 200 and 10 <= aimed.height <= 200

    def outlined() -> dict[str, Any] | None:
        last = live_state(page).get("last") or {}
        shapes = [o for o in last.get("outlines", []) if o["shape"] == "element"]
        return shapes[0] if shapes else None

    outline = wait_for(outlined, 5, "the clicked button outlined")
    assert outline["kind"] == "click" and outline["state"] == "done"
    assert outline["session"] == session
    # the second click's button is the same "7": the same rectangle, in the frame's pixels
    assert (outline["x"], outline["y"], outline["w"], outline["h"]) == (
        aimed.x - calc.bounds.x,
        aimed.y - calc.bounds.y,
        aimed.width,
        aimed.height,
    )
    assert page.locator("#live-overlay rect.outline.element").count() >= 1
    # the pointer is drawn where it is (in the frame's pixels), and not when it is outside
    inside = (calc.bounds.x + 40, calc.bounds.y + 90)
    warp_pointer(*inside)
    wait_for(
        lambda: (
            (live_state(page).get("last") or {}).get("pointer")
            == [inside[0] - calc.bounds.x, inside[1] - calc.bounds.y]
        ),
        5,
        "the pointer's new position",
    )
    assert page.locator("#live-overlay circle.pointer").count() == 1
    warp_pointer(calc.bounds.x + calc.bounds.width + 200, 700)
    wait_for(
        lambda: page.locator("#live-overlay circle.pointer").count() == 0,
        5,
        "the pointer gone from the window's view",
    )
    shot(page, "live-calculator")
    agent.run(agent.kernel.stop(session))


def test_an_action_still_running_has_its_window_outlined(
    logged_in: Any, ui_server: UiServer, agent: Agent, calculator: App
) -> None:
    calc = agent.window_of(calculator.pid)
    page = logged_in
    page.goto(f"{ui_server.base_url}/live")  # the whole desktop: the window is a part of it
    frames_shown(page, 2)
    session = agent.run(
        agent.kernel.open_session("live-view-keys", target=TargetSpec(pid=calculator.pid))
    )

    async def press() -> None:
        state = await agent.kernel.observe(session, include_screenshot=False)
        obs = state.observation
        # ten digits held 0.3 s each: an action of about three seconds
        keys = PressKeyAction(keys=["1"] * 10, duration_ms=3000)
        await agent.kernel.execute(session, obs.frame_id, obs.tree_version, keys)

    running = asyncio.run_coroutine_threadsafe(press(), agent.loop)

    def window_outlined() -> dict[str, Any] | None:
        last = live_state(page).get("last") or {}
        found = [o for o in last.get("outlines", []) if o["shape"] == "window"]
        return found[0] if found and found[0]["state"] == "acting" else None

    outline = wait_for(window_outlined, 10, "the window outlined while the keys are pressed")
    assert not running.done()
    assert outline["kind"] == "press_key" and outline["session"] == session
    b = calc.bounds
    assert (outline["x"], outline["y"], outline["w"], outline["h"]) == (
        b.x,
        b.y,
        b.width,
        b.height,
    )
    assert page.locator("#live-overlay rect.outline.window.acting").count() >= 1
    shot(page, "live-agent-acting")
    running.result(30)
    agent.run(agent.kernel.stop(session))


def test_frames_come_at_five_per_second_within_the_latency_target(
    logged_in: Any, ui_server: UiServer, calculator: App, agent: Agent
) -> None:
    calc = agent.window_of(calculator.pid)
    page = logged_in
    page.goto(f"{ui_server.base_url}/live?target={calc.window_id}&fps=5")
    frames_shown(page, 5)
    first = live_state(page)
    time.sleep(4.0)
    later = live_state(page)
    numbers, shown_at, captured = later["numbers"], later["shownAt"], later["captured"]
    start = numbers.index(first["last"]["n"])
    # every frame captured in the window reached the page (none skipped on the way) ...
    assert numbers[start:] == list(range(numbers[start], numbers[-1] + 1))
    # ... and they were captured at 5 per second (the server's clock) ...
    frames = numbers[-1] - numbers[start]
    assert frames >= 15, numbers[start:]
    rate = frames / ((captured[-1] - captured[start]) / 1000)
    assert rate >= 4.95, (rate, captured[start:])
    # ... and shown at that rate, give or take the browser's own jitter at the two ends
    shown_rate = frames / ((shown_at[-1] - shown_at[start]) / 1000)
    assert shown_rate >= 4.5, shown_rate
    latencies = sorted(later["latencies"][start:])
    median = latencies[len(latencies) // 2]
    assert 0 < median <= 150, latencies
    shown = page.locator("#live-rate").inner_text()
    assert float(shown) >= 4.0  # the page says the rate too


def test_no_frames_are_captured_once_nobody_watches(
    browser: Any, ui_server: UiServer, logged_in: Any, calculator: App
) -> None:
    watcher = logged_in.context.new_page()
    watcher.goto(f"{ui_server.base_url}/live")  # the whole desktop
    frames_shown(watcher, 3)
    watching = stats(watcher, ui_server.base_url)
    assert watching["viewers"] >= 1 and watching["running"] >= 1
    assert any(s["target"] == "screen" for s in watching["sources"])
    time.sleep(1.0)
    assert stats(watcher, ui_server.base_url)["captures"] >= watching["captures"] + 3
    shot(watcher, "live-desktop")

    # a second viewer of the same target shares the first one's loop
    second = logged_in.context.new_page()
    second.goto(f"{ui_server.base_url}/live")
    frames_shown(second, 2)
    sources = [s for s in stats(second, ui_server.base_url)["sources"] if s["target"] == "screen"]
    assert len(sources) == 1 and sources[0]["viewers"] == 2
    second.close()

    logged_in.goto(f"{ui_server.base_url}/readiness")  # the module's page leaves /live too
    watcher.close()
    wait_for(
        lambda: stats(logged_in, ui_server.base_url)["running"] == 0,
        5,
        "the capture loop to stop",
    )
    stopped = stats(logged_in, ui_server.base_url)
    assert stopped["viewers"] == 0 and stopped["sources"] == []
    time.sleep(2.0)
    assert stats(logged_in, ui_server.base_url)["captures"] == stopped["captures"]


def test_a_password_field_is_painted_out_unless_redaction_is_off(
    logged_in: Any,
    ui_server: UiServer,
    agent: Agent,
    password_dialog: App,
    redaction_restored: Database,
) -> None:
    Settings.update(redaction_restored, redact_sensitive_content=True)
    window, regions = agent.type_password(password_dialog, "hunter2 is my password")
    assert len(regions) == 1
    region = regions[0]
    page = logged_in

    for target in (window.window_id, "screen"):
        page.goto(f"{ui_server.base_url}/live?target={target}")
        frames_shown(page, 2)
        origin = (window.bounds.x, window.bounds.y) if target != "screen" else (0, 0)
        screen_region = Rect(
            x=window.bounds.x + region.x,
            y=window.bounds.y + region.y,
            width=region.width,
            height=region.height,
        )
        box = inset(screen_region, origin)

        def painted(box: tuple[int, int, int, int] = box) -> Image.Image | None:
            _, image = frame_image(page)
            last = live_state(page)["last"]
            return image if last["painted"] >= 1 and grey_share(image, box) > 0.97 else None

        image = wait_for(painted, 10, f"the password field painted out ({target})")
        assert live_state(page)["last"]["redact"] is True
        assert page.locator("#live-redaction-on").is_visible()
        # the rest of the dialog is not painted: its title row and buttons show
        whole = (window.bounds.x - origin[0], window.bounds.y - origin[1])
        outside = (whole[0], whole[1], whole[0] + window.bounds.width, box[1] - 6)
        assert grey_share(image, outside) < 0.5
        shot(page, f"live-password-painted-{'window' if target != 'screen' else 'screen'}")

    # off: the next frames show the field (white, with the typed text's dots)
    Settings.update(redaction_restored, redact_sensitive_content=False)

    def shown_plain() -> Image.Image | None:
        _, image = frame_image(page)
        last = live_state(page)["last"]
        return image if last["redact"] is False and grey_share(image, box) < 0.5 else None

    plain = wait_for(shown_plain, 10, "the field shown with redaction off")
    low, high = plain.crop(box).convert("L").getextrema()
    assert high - low > 100  # the field's background and its dots
    assert page.locator("#live-redaction-off").is_visible()
    # named as the Settings page names it, never by its internal key
    notice = page.locator("#live-redaction-off").inner_text()
    assert "Paint out password fields" in notice and "redactSensitive" not in notice, notice
    shot(page, "live-password-redaction-off")

    # and on again: painted at once
    Settings.update(redaction_restored, redact_sensitive_content=True)
    wait_for(lambda: grey_share(frame_image(page)[1], box) > 0.97, 10, "painted again after on")


def test_bad_arguments_are_refused_with_the_reason(logged_in: Any, ui_server: UiServer) -> None:
    request = logged_in.context.request
    for query, field in (("fps=11", "fps"), ("fps=abc", "fps"), ("target=../etc", "target")):
        response = request.get(f"{ui_server.base_url}/live/stream?{query}")
        assert response.status == 400, (query, response.status)
        assert field in response.text()
    page = request.get(f"{ui_server.base_url}/live?target=0x1")
    assert page.ok and "That window is gone" in page.text()
