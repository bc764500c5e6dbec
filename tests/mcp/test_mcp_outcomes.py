"""What an action's result says happened, as an agent meets it through the official
TypeScript MCP SDK (what Claude Code and pi are built on), on a real GTK 3 window whose
effects come late (tests/host/late_gtk_app.py):

* a key and a click whose dialog opens 700 ms later — after the toolkit's bound and the
  600 ms first-event rule — return the dialog's state, not ``action_noop``
  (host/post_action.py, "Late effects"; runtime/window_changes.py);
* while the modal dialog is open, ``list_windows`` says it has the focus and
  ``get_app_state {}`` shows it; Close (or Escape) on it returns the window now in front,
  not ``target_not_found``;
* a click that changes nothing is ``action_noop`` only after the host watched the whole
  settle budget;
* ``set_value`` that cannot replace a field's text (an entry of 5 characters) says so
  (``action_unconfirmed``, ``not_seen``), one that can says its effect was confirmed
  (host/effect_checks.py), the app's own side agreeing;
* text that ends in Enter, into a field whose Enter makes its text something else (an
  address bar), is read back before the Enter: confirmed, not "changed, but not as typed";
* on a window without a tree, keys without a place are refused (``focus_unknown``) and go
  where a point of the image says (runtime/text_targets.py).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.apps import App, launch, launch_accessible
from desktop_kit import GTK3_LATE_ARGV

pytestmark = pytest.mark.desktop


class Output:
    """The app's stdout lines (``changed NAME TEXT``, ``short X Y W H``), read as they come."""

    def __init__(self, app: App) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        assert app.proc.stdout is not None
        stdout = app.proc.stdout
        threading.Thread(target=self._read, args=(stdout,), daemon=True).start()
        self.seen: list[str] = []

    def _read(self, stdout: Any) -> None:
        for raw in stdout:
            self.lines.put(raw.decode(errors="replace").rstrip("\n"))

    def wait_for(self, prefix: str, timeout: float = 30.0) -> str:
        """The first line starting with ``prefix`` (seen before, or within ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            hit = next((line for line in self.seen if line.startswith(prefix)), None)
            if hit is not None:
                return hit
            left = deadline - time.monotonic()
            assert left > 0, (prefix, self.seen)
            try:
                self.seen.append(self.lines.get(timeout=left))
            except queue.Empty:
                continue


@pytest.fixture
def late(dp_desktop: Any) -> Iterator[tuple[App, Output]]:
    app = launch_accessible(GTK3_LATE_ARGV, capture_stdout=True)
    try:
        yield app, Output(app)
    finally:
        app.stop()


@pytest.fixture
def late_no_tree(dp_desktop: Any) -> Iterator[tuple[App, Output]]:
    app = launch([*GTK3_LATE_ARGV, "--no-a11y"], capture_stdout=True)
    try:
        yield app, Output(app)
    finally:
        app.stop()


async def calls(*chain: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    report = await run_ts_script(
        TS_CALLS,
        stdio_config(),
        json.dumps([{"name": name, "arguments": args} for name, args in chain]),
    )
    results = report["results"]
    assert isinstance(results, list)
    return results


def header(result: dict[str, Any]) -> str:
    """The ``Window=(…)`` line of the state a result carries ('' when it carries none)."""
    return next((ln for ln in result["text"].splitlines() if ln.startswith("Window=(")), "")


def dialog_state(result: dict[str, Any]) -> None:
    assert not result["isError"], result["text"]
    assert 'A dialog of this window opened: "Later"' in result["text"], result["text"]
    assert header(result).startswith('Window=(title="Later"'), result["text"]
    d = result["diagnostic"]
    assert d["stateIdIssued"] and d.get("code") is None and not d.get("noop"), d


def front_again(result: dict[str, Any]) -> None:
    assert not result["isError"], result["text"]
    assert 'The window now in front of the app is "Late effects"' in result["text"]
    assert header(result).startswith('Window=(title="Late effects"'), result["text"]
    assert result["diagnostic"]["stateIdIssued"], result["diagnostic"]


async def test_late_dialogs_are_the_result_and_closing_them_gives_the_window_back(
    late: tuple[App, Output],
) -> None:
    app, _ = late
    (
        first,
        keyed,
        listed,
        plain,
        closed,
        clicked,
        escaped,
    ) = await calls(
        ("get_app_state", {"app": app.pid}),
        ("press_key", {"state_id": "$state", "keys": ["ctrl+d"]}),
        ("list_windows", {}),
        ("get_app_state", {}),
        ("click", {"state_id": "$state", "element_id": '$element:button "Close"'}),
        ("click", {"state_id": "$state", "element_id": '$element:button "Open later"'}),
        ("press_key", {"state_id": "$state", "keys": ["Escape"]}),
    )
    assert not first["isError"], first["text"]
    # the key's dialog came 700 ms after it: past the 600 ms first-event rule
    dialog_state(keyed)
    assert "takes the window's input" in keyed["text"]
    dialog_id = header(keyed).rsplit("id=", 1)[1].rstrip(")")
    windows = json.loads(listed["text"].split("\n\ndeskpilot diagnostic")[0])["windows"]
    mine = {w["windowId"]: w for w in windows if w["app"]["pid"] == app.pid}
    assert mine[dialog_id]["focused"] is True and mine[dialog_id]["modal"] is True, mine
    assert [w["focused"] for k, w in mine.items() if k != dialog_id] == [False], mine
    assert header(plain).startswith('Window=(title="Later"'), plain["text"]
    front_again(closed)
    # the click's dialog came 700 ms after it: past GTK 3's short bound
    dialog_state(clicked)
    front_again(escaped)


async def test_a_click_that_changes_nothing_is_a_noop_after_the_whole_budget(
    late: tuple[App, Output],
) -> None:
    app, _ = late
    _, nothing = await calls(
        ("get_app_state", {"app": app.pid}),
        ("click", {"state_id": "$state", "element_id": '$element:button "Nothing"'}),
    )
    assert nothing["text"].startswith("action_noop: "), nothing["text"]
    assert nothing["diagnostic"]["code"] == "action_noop"
    assert nothing["diagnostic"]["steps"][0]["waitBound"] in ("toolkit_none", "event")
    assert nothing["ms"] >= 1400, nothing["ms"]  # watched to the end of the 1.5 s budget


async def test_set_value_replaces_or_says_it_could_not(late: tuple[App, Output]) -> None:
    app, out = late
    _, cut, replaced = await calls(
        ("get_app_state", {"app": app.pid}),
        (
            "set_value",
            {"state_id": "$state", "element_id": '$element:textField "Short"', "value": "abcdefgh"},
        ),
        (
            "set_value",
            {"state_id": "$state", "element_id": '$element:textField "Short"', "value": "xyz"},
        ),
    )
    assert out.wait_for("changed Short abcde") == "changed Short abcde"  # cut at 5
    assert not cut["isError"], cut["text"]
    assert cut["text"].startswith("action_unconfirmed: "), cut["text"]
    assert "is not the value asked for" in cut["text"]
    d = cut["diagnostic"]
    assert d["code"] == "action_unconfirmed" and d["effectReason"] == "not_seen", d
    assert d["steps"][0]["effect"] == "unconfirmed" and not d.get("noop"), d
    assert 'textField "Short" = "abcde"' in cut["text"]
    assert out.wait_for("changed Short xyz") == "changed Short xyz"
    assert replaced["diagnostic"]["effect"] == "confirmed", replaced["diagnostic"]
    assert "code" not in replaced["diagnostic"] and "effect confirmed" in replaced["text"]


async def test_keys_without_a_place_on_a_window_without_a_tree(
    late_no_tree: tuple[App, Output],
) -> None:
    app, out = late_no_tree
    x, y, w, h = (int(v) for v in out.wait_for("short ").split()[1:])
    point = {"x": x + w // 2, "y": y + h // 2}
    first, refused, pressed, typed, later = await calls(
        ("get_app_state", {"app": app.pid}),
        ("type_text", {"state_id": "$state", "text": "hi"}),
        ("press_key", {"state_id": "$state", "keys": ["End"]}),
        ("type_text", {"state_id": "$state", "text": "hi", **point}),
        ("get_app_state", {"app": app.pid}),
    )
    assert not first["isError"], first["text"]
    assert "elements=" in first["text"] and "[focused]" not in first["text"]
    for result in (refused, pressed):
        d = result["diagnostic"]
        assert result["isError"] and d["code"] == "unsupported_action", result["text"]
        assert d["details"]["reason"] == "focus_unknown" and d["actionOutcome"] == "not_dispatched"
        assert "state_id is still valid" in result["text"]
    assert not typed["isError"], typed["text"]
    assert [s["kind"] for s in typed["diagnostic"]["steps"]] == ["click", "type_text"]
    assert out.wait_for("changed Short abhi") == "changed Short abhi"  # the entry had "ab"
    assert not later["isError"]


async def test_text_ending_in_enter_is_read_back_before_the_enter(
    late: tuple[App, Output],
) -> None:
    """A trial typed an address with its Enter into Firefox's address bar and was told the
    text did not land: after the Enter the bar shows the page's address, not what was
    typed. The field is read back before the Enter goes."""
    app, out = late
    _, typed = await calls(
        ("get_app_state", {"app": app.pid}),
        (
            "type_text",
            {
                "state_id": "$state",
                "element_id": '$element:textField "Address"',
                "text": "example.org\n",
            },
        ),
    )
    # the Enter went, as a key: the app made the text an address
    assert out.wait_for("changed Address https://") == "changed Address https://example.org/"
    assert not typed["isError"], typed["text"]
    d = typed["diagnostic"]
    assert d["effect"] == "confirmed" and "code" not in d, d
    assert 'textField "Address" = "https://example.org/"' in typed["text"], typed["text"]
