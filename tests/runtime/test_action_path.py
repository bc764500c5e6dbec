"""The runtime's action path against a recording fake kernel (tests/runtime/fake_kernel.py):
self-healing, the unsupported fallback, no-ops, dialogs and new windows, outcomes that may
have run, refusals that give the stateId back, and the redaction of the model frame. No host,
no desktop."""

from __future__ import annotations

import io
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_kernel import FakeKernel, Outcome, Screen, solid_png, tree_version
from PIL import Image

from deskpilot.kernel.port import KernelPort
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    ClickAction,
    InvokeElementAction,
    Rect,
    TreeRead,
    TypeTextAction,
)
from deskpilot.runtime.action_results import CONFIRMED_BY
from deskpilot.runtime.call import ToolOutcome
from deskpilot.runtime.implicit_sessions import atomic_contract
from deskpilot.runtime.runtime import Runtime, RuntimeConfig
from deskpilot.store.settings import SettingsModel

AGENT = "a"

EDITOR = """\
- window "Untitled 1 - Mousepad" [1]
  - toolBar [2]
    - button "Open" [3]
    - button "Save" [4]
  - scrollArea [5]
    - text [focused] [editable] [6]
  - statusBar "Line 1, Column 1" [7]"""

#: a button appeared before "Save": it gets a new id, and every other element keeps its own
#: (the host keeps ids: host/atspi/element_ids.py)
EDITOR_SHIFTED = """\
- window "Untitled 1 - Mousepad" [1]
  - toolBar [2]
    - button "New" [8]
    - button "Open" [3]
    - button "Save" [4]
  - scrollArea [5]
    - text [focused] [editable] [6]
  - statusBar "Line 1, Column 1" [7]"""

#: "Save" is gone: its id with it
EDITOR_NO_SAVE = """\
- window "Untitled 1 - Mousepad" [1]
  - toolBar [2]
    - button "Open" [3]
  - scrollArea [5]
    - text [focused] [editable] [6]
  - statusBar "Line 1, Column 1" [7]"""

EDITOR_TYPED = EDITOR.replace("Line 1, Column 1", "Line 1, Column 3")


def editor(tree: str = EDITOR, **kw: Any) -> Screen:
    return Screen(tree, **kw)


@pytest.fixture
async def fake() -> FakeKernel:
    return FakeKernel(editor())


@pytest.fixture
async def runtime(fake: FakeKernel) -> AsyncIterator[Runtime]:
    rt = Runtime(fake, snapshots=None, config=RuntimeConfig())
    yield rt
    await rt.close()


def state_id_of(out: ToolOutcome) -> str:
    m = re.search(r"^state_id=(\S+)$", out.text, re.M)
    assert m is not None, out.text
    return m.group(1)


def diag(out: ToolOutcome) -> dict[str, Any]:
    return out.diagnostic.to_json()


async def look(rt: Runtime, app: str | int = "mousepad") -> str:
    out = await rt.call("get_app_state", {"app": app}, agent_session=AGENT)
    assert not out.is_error, out.text
    return state_id_of(out)


async def act(rt: Runtime, tool: str, **args: Any) -> ToolOutcome:
    return await rt.call(tool, args, agent_session=AGENT)


# ---------------------------------------------------------------------- the fake itself


async def test_the_fake_is_a_kernel_port_that_checks_frames_like_the_kernel() -> None:
    fake = FakeKernel(editor())
    port: KernelPort = fake  # mypy proves the fake satisfies the port
    sid = await port.open_session("a", atomic_contract())
    first = (await port.observe(sid)).observation
    second = (await port.observe(sid)).observation
    assert (first.frame_id, second.frame_id) == ("f1", "f2")
    assert first.tree_version == second.tree_version == tree_version(EDITOR)
    click = ClickAction(element_id=4)
    with pytest.raises(DeskpilotError) as old:
        await port.execute(sid, first.frame_id, first.tree_version, click)
    assert old.value.code is ErrorCode.STALE_FRAME
    with pytest.raises(DeskpilotError) as tree:
        await port.execute(sid, second.frame_id, "tv-other", click)
    assert tree.value.code is ErrorCode.STALE_TREE
    done = await port.execute(sid, second.frame_id, second.tree_version, click, observe_after=True)
    assert done.post is not None and done.post.windows is not None
    post = done.post.observation
    # the action consumed its frame; the carried post state is the current one now
    with pytest.raises(DeskpilotError):
        await port.execute(sid, second.frame_id, second.tree_version, click)
    await port.execute(sid, post.frame_id, post.tree_version, click)
    # a capture does not replace the current frame
    cap = (await port.capture(sid)).observation
    with pytest.raises(DeskpilotError):
        await port.execute(sid, cap.frame_id, cap.tree_version, click)
    assert [r.outcome for r in fake.executes()] == [
        "stale_frame",
        "stale_tree",
        "ok",
        "stale_frame",
        "ok",
        "stale_frame",
    ]
    assert [r.refused_by for r in fake.executes()].count("freshness") == 4


# ---------------------------------------------------------------------- self-healing


@pytest.mark.parametrize(
    "code", [ErrorCode.STALE_FRAME, ErrorCode.STALE_TREE, ErrorCode.FOCUS_MISMATCH]
)
async def test_a_stale_click_heals_once_against_the_new_frame_with_the_same_id(
    fake: FakeKernel, runtime: Runtime, code: ErrorCode
) -> None:
    state = await look(runtime)
    # the window changed under the agent: a button came before "Save", which is still [4]
    fake.then(Outcome.fail(code, then=editor(EDITOR_SHIFTED)))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert not out.is_error, out.text
    first, second = fake.since(mark, "execute")
    assert first.frame_id == "f1" and isinstance(first.action, ClickAction)
    assert first.action.element_id == 4
    # exactly one re-observe between them (no screenshot), and the retry quotes its frame
    reobserved = fake.since(mark, "observe")[0]
    assert reobserved.screenshot is False
    assert second.frame_id == reobserved.issued != first.frame_id
    assert second.tree_version == tree_version(EDITOR_SHIFTED)
    assert isinstance(second.action, ClickAction) and second.action.element_id == 4
    d = diag(out)
    assert d["healed"] == 1 and d["actionOutcome"] == "call_returned"
    assert d["steps"] == [
        {
            "kind": "click",
            "outcome": "call_returned",
            "method": "semantic",
            "risk": "L1",
            "healed": True,
        }
    ]


async def test_a_second_stale_refusal_is_not_healed_again(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.STALE_FRAME), Outcome.fail(ErrorCode.STALE_FRAME))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert out.is_error
    d = diag(out)
    assert d["code"] == "stale_frame" and d["healed"] == 1
    assert d["actionOutcome"] == "not_dispatched"
    assert len(fake.since(mark, "execute")) == 2
    assert len(fake.since(mark, "observe")) == 1  # one re-observe, not two


async def test_an_element_gone_after_the_reobserve_is_stale_tree_without_a_second_execute(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.STALE_FRAME, then=editor(EDITOR_NO_SAVE)))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    d = diag(out)
    assert d["code"] == "stale_tree"
    assert "no longer present" in (d["message"] or "")
    assert len(fake.since(mark, "execute")) == 1
    assert d["steps"] == [{"kind": "click", "outcome": "not_dispatched", "code": "stale_tree"}]


async def test_a_different_app_after_the_reobserve_is_state_changed_and_enters_recovery(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    other = editor(pid=5151)  # the same window, a new process in it
    fake.then(Outcome.fail(ErrorCode.STALE_FRAME, then=other))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    d = diag(out)
    assert d["code"] == "state_changed"
    assert len(fake.since(mark, "execute")) == 1
    recovery = runtime.status(AGENT)["recovery"]
    assert recovery is not None and recovery["failedMethod"] == "click"
    assert recovery["app"]["pid"] == 4242 and d["recovery"] == recovery
    # recovering: an action is refused before anything is sent …
    mark = fake.mark()
    refused = await act(runtime, "press_key", state_id=state, keys=["Escape"])
    assert diag(refused)["code"] == "state_changed" and fake.since(mark, "execute") == []
    # … until a new state of that window arrives
    fresh = await look(runtime, "0x1a00003")
    assert runtime.status(AGENT)["recovery"] is None
    again = await act(runtime, "click", state_id=fresh, element_id=4)
    assert not again.is_error, again.text


async def test_a_positional_click_after_a_resize_is_refused_and_not_retried(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.STALE_FRAME, then=editor(width=1000, height=700)))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, x=400, y=300)
    d = diag(out)
    assert d["code"] == "stale_frame"
    assert d["details"] == {"reason": "window_resized"}
    assert len(fake.since(mark, "execute")) == 1


async def test_a_positional_click_heals_at_the_same_point_when_the_size_is_unchanged(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.STALE_FRAME, then=editor(EDITOR_SHIFTED)))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, x=400, y=300)
    assert not out.is_error, out.text
    first, second = fake.since(mark, "execute")
    assert isinstance(first.action, ClickAction) and isinstance(second.action, ClickAction)
    assert first.action.point is not None and first.action.point == second.action.point
    assert (first.action.point.x, first.action.point.y) == (0.5, 0.5)
    assert second.frame_id != first.frame_id


# ---------------------------------------------------------------------- the unsupported fallback


async def test_type_text_whose_focus_is_unsupported_clicks_the_element_then_types(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(
        Outcome.fail(ErrorCode.UNSUPPORTED_ACTION), Outcome.ok(), Outcome.ok(editor(EDITOR_TYPED))
    )
    mark = fake.mark()
    out = await act(runtime, "type_text", state_id=state, element_id=6, text="hi")
    assert not out.is_error, out.text
    sent = [r.action for r in fake.since(mark, "execute") if r.dispatched]
    assert sent == [
        InvokeElementAction(element_id=6, action="focus"),
        ClickAction(element_id=6),
        TypeTextAction(text="hi", element_id=6),
    ]
    kinds = [s["kind"] for s in diag(out)["steps"]]
    assert kinds == ["focus", "type_text"]
    assert "New state below" in out.text


async def test_the_fallback_does_not_spend_the_self_heal(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.UNSUPPORTED_ACTION))
    mark = fake.mark()
    out = await act(runtime, "type_text", state_id=state, element_id=6, text="hi")
    assert not out.is_error, out.text
    assert [r.refused_by for r in fake.since(mark, "execute")] == [None, None, None]
    assert "healed" not in diag(out)


async def test_the_fallback_still_runs_after_a_heal(fake: FakeKernel, runtime: Runtime) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.STALE_FRAME), Outcome.fail(ErrorCode.UNSUPPORTED_ACTION))
    out = await act(runtime, "type_text", state_id=state, element_id=6, text="hi")
    assert not out.is_error, out.text
    assert [r.action.kind for r in fake.executes(dispatched_only=True) if r.action] == [
        "invoke_element",
        "invoke_element",
        "click",
        "type_text",
    ]


async def test_a_second_unsupported_is_not_retried(fake: FakeKernel, runtime: Runtime) -> None:
    state = await look(runtime)
    fake.then(
        Outcome.fail(ErrorCode.UNSUPPORTED_ACTION), Outcome.fail(ErrorCode.UNSUPPORTED_ACTION)
    )
    mark = fake.mark()
    out = await act(runtime, "type_text", state_id=state, element_id=6, text="hi")
    d = diag(out)
    assert d["code"] == "unsupported_action" and d["actionOutcome"] == "not_dispatched"
    sent = [r.action for r in fake.since(mark, "execute") if r.dispatched]
    assert sent == [InvokeElementAction(element_id=6, action="focus"), ClickAction(element_id=6)]
    assert not any(isinstance(r.action, TypeTextAction) for r in fake.executes())


async def test_a_click_refused_unsupported_has_no_fallback(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.UNSUPPORTED_ACTION))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert diag(out)["code"] == "unsupported_action"
    assert len(fake.since(mark, "execute")) == 1


# ---------------------------------------------------------------------- steps and post states


async def test_steps_chain_on_the_carried_post_state_without_observing(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    mark = fake.mark()
    out = await act(runtime, "type_text", state_id=state, element_id=6, text="hi", submit=True)
    assert not out.is_error, out.text
    focus, typed, enter = fake.since(mark, "execute")
    assert typed.frame_id == focus.issued and enter.frame_id == typed.issued
    assert fake.since(mark, "observe", "windows") == []  # everything came with the results
    assert [s["kind"] for s in diag(out)["steps"]] == ["focus", "type_text", "press_key"]


async def test_steps_observe_between_them_when_no_post_state_is_carried(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.ok(post=False), Outcome.ok(post=False))
    mark = fake.mark()
    out = await act(runtime, "type_text", state_id=state, element_id=6, text="hi")
    assert not out.is_error, out.text
    assert fake.methods("execute", "observe", "windows")[-5:] == [
        "execute",
        "observe",
        "execute",
        "observe",
        "windows",
    ]
    between, after = fake.since(mark, "observe")
    assert between.screenshot is False and after.screenshot is True
    assert fake.since(mark, "execute")[1].frame_id == between.issued


async def test_an_unobservable_window_after_the_action_says_so(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.ok(post=False))
    fake.observe_failures.append(ErrorCode.TARGET_NOT_FOUND)
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert not out.is_error
    d = diag(out)
    assert d["actionOutcome"] == "call_returned" and d["observationOutcome"] == "unavailable"
    assert d["observationCode"] == "target_not_found" and not d["stateIdIssued"]
    assert "could not be observed afterwards" in out.text


# ---------------------------------------------------------------------- no-ops


async def test_an_unchanged_window_is_action_noop_and_noops_count_until_a_change(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    for n in (1, 2):
        out = await act(runtime, "click", state_id=state, element_id=4)
        assert not out.is_error  # a no-op is said, not raised
        assert out.text.startswith("action_noop: ")
        d = diag(out)
        assert d["code"] == "action_noop" and d["noop"] is True
        assert d["observationOutcome"] == "available"
        session = runtime.status(AGENT)["session"]
        assert session["consecutiveNoops"] == n
        state = state_id_of(out)
    assert set(session) == {
        "sessionId",
        "state",
        "steps",
        "consecutiveNoops",
        "contract",
        "ageMs",
        "busy",
        "idleReleaseInMs",
        "boundTarget",
        "takenOver",
    }
    assert session["contract"]["maxConsecutiveNoops"] == 20
    assert session["state"] == "observing" and session["steps"] == 2
    fake.then(Outcome.ok(editor(EDITOR_TYPED)))
    changed = await act(runtime, "click", state_id=state, element_id=4)
    assert "code" not in diag(changed) and not changed.text.startswith("action_noop")
    assert runtime.status(AGENT)["session"]["consecutiveNoops"] == 0


async def test_a_changed_screenshot_with_the_same_tree_is_not_a_noop(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.ok(editor(color=(20, 90, 200))))
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert not diag(out).get("noop") and "code" not in diag(out)
    assert runtime.status(AGENT)["session"]["consecutiveNoops"] == 0


# ------------------------------------------------------------- what is said of the effect


PARTIAL = TreeRead(partial="deadline", unread_subtrees=1)


@pytest.mark.parametrize(
    "after",
    [editor(tree_read=PARTIAL), editor(tree_unavailable=True)],
    ids=["partial", "unavailable"],
)
async def test_an_unchanged_window_in_an_incomplete_look_is_unconfirmed_not_noop(
    fake: FakeKernel, runtime: Runtime, after: Screen
) -> None:
    """LibreOffice answered a key with action_noop while its tree read hit the deadline; the
    dialog the key opened came seconds later. A look that is not complete cannot say
    nothing changed."""
    state = await look(runtime)
    fake.then(Outcome.ok(after, wait_bound="first_event"))
    out = await act(runtime, "press_key", state_id=state, keys=["ctrl+h"])
    assert not out.is_error, out.text
    assert out.text.startswith("action_unconfirmed: the window looks the same"), out.text
    assert "action_noop" not in out.text
    d = diag(out)
    assert d["code"] == "action_unconfirmed" and not d.get("noop")
    assert d["effect"] == "unconfirmed" and d["effectReason"] == "look_incomplete"
    assert runtime.status(AGENT)["session"]["consecutiveNoops"] == 0


async def test_a_wait_that_ran_out_of_budget_is_unconfirmed_not_noop(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.ok(wait_bound="budget"))
    out = await act(runtime, "click", state_id=state, element_id=4)
    d = diag(out)
    assert d["code"] == "action_unconfirmed" and d["effectReason"] == "still_changing"
    assert d["stateIdIssued"]  # the state itself is complete: it may be acted on


async def test_what_the_host_could_not_see_is_said_with_its_note(
    fake: FakeKernel, runtime: Runtime
) -> None:
    """The host read the effect back and did not find it (typed text not in the field):
    never success, never action_noop; its words say why."""
    state = await look(runtime)
    note = "the field's text did not change"
    fake.then(Outcome.ok(editor(EDITOR_TYPED), effect="unconfirmed", effect_note=note))
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert out.text.startswith(
        f"action_unconfirmed: the action was sent, but its effect could not be seen ({note})."
    ), out.text
    d = diag(out)
    assert d["code"] == "action_unconfirmed" and d["effectReason"] == "not_seen"
    assert d["steps"][0]["effect"] == "unconfirmed"
    assert note not in json.dumps(d)  # words go into the text, codes into the diagnostic
    assert not out.is_error and d["stateIdIssued"]


async def test_an_effect_the_host_confirmed_is_said_and_is_no_noop(
    fake: FakeKernel, runtime: Runtime
) -> None:
    """A value set to the one it already had: nothing changed, and it is as asked."""
    state = await look(runtime)
    fake.then(Outcome.ok(effect="confirmed"))
    out = await act(runtime, "click", state_id=state, element_id=4)
    d = diag(out)
    assert "code" not in d and not d.get("noop") and d["effect"] == "confirmed"
    assert out.text.splitlines()[0].endswith(f"; effect confirmed ({CONFIRMED_BY})")
    assert runtime.status(AGENT)["session"]["consecutiveNoops"] == 0


async def test_an_app_that_did_not_answer_after_the_action_is_unconfirmed(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.ok(editor(tree_read=TreeRead(stale_age_ms=812.4))))
    out = await act(runtime, "press_key", state_id=state, keys=["a"])
    d = diag(out)
    assert d["code"] == "action_unconfirmed" and d["effectReason"] == "app_not_answering"
    assert d["appUnresponsiveMs"] == 812 and "do not repeat the action" in out.text


# ------------------------------------------------------------- keys with nowhere known to go


SHEET = """\
- window "Untitled 1 - LibreOffice Calc" [1]
  - … [unread: 12 children — deadline]"""


async def _partial_state(fake: FakeKernel, runtime: Runtime, tree: str = SHEET) -> str:
    fake.queue(editor(tree, tree_read=PARTIAL))
    return await look(runtime)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("type_text", {"text": "=A1*2"}),
        ("paste", {"text": "=A1*2"}),
        ("press_key", {"keys": ["Return"]}),
    ],
)
async def test_keys_without_a_place_on_a_state_that_cannot_show_the_focus_are_refused(
    fake: FakeKernel, runtime: Runtime, tool: str, args: dict[str, Any]
) -> None:
    """A Calc sheet with no tree took an agent's text into whatever cell had the focus, and
    the result said nothing changed. Nothing is sent; the state_id stays valid."""
    state = await _partial_state(fake, runtime)
    out = await act(runtime, tool, state_id=state, **args)
    d = diag(out)
    assert out.is_error and d["code"] == "unsupported_action", out.text
    assert d["details"]["reason"] == "focus_unknown" and d["actionOutcome"] == "not_dispatched"
    assert "x and y of this state's image" in d["message"]
    assert fake.executes() == []
    # the same state acts once the call says where the keys go: the point is clicked first
    ok = await act(runtime, tool, state_id=state, x=40, y=30, **args)
    assert not ok.is_error, ok.text
    first, then = fake.executes()
    assert isinstance(first.action, ClickAction) and first.action.point is not None
    assert (
        then.action is not None
        and then.action.kind
        == {
            "type_text": "type_text",
            "paste": "paste_text",
            "press_key": "press_key",
        }[tool]
    )


async def test_keys_go_where_a_partial_tree_shows_the_focus_and_to_a_terminal(
    fake: FakeKernel, runtime: Runtime
) -> None:
    focused = SHEET + '\n  - textField "Name Box" = "A1" [focused] [2]'
    state = await _partial_state(fake, runtime, focused)
    assert not (await act(runtime, "press_key", state_id=state, keys=["Return"])).is_error
    fake.queue(editor(SHEET, tree_read=TreeRead(source="visual"), app="xterm"))
    state = await look(runtime)  # the listing still names the first screen
    assert not (await act(runtime, "type_text", state_id=state, text="ls")).is_error
    # a stopped app's last tree is whole: nothing focused there is what is known (the keys
    # go to the window, and wait in the X server until the app runs again)
    unfocused = EDITOR.replace("[focused] ", "")
    fake.queue(editor(unfocused, tree_read=TreeRead(stale_age_ms=900.0)))
    state = await look(runtime, "xterm")  # the listing names the screen last observed
    assert not (await act(runtime, "press_key", state_id=state, keys=["x"])).is_error


async def test_press_key_with_an_element_focuses_it_first(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    out = await act(runtime, "press_key", state_id=state, keys=["ctrl+a"], element_id=6)
    assert not out.is_error, out.text
    focus, keys = fake.executes()
    assert isinstance(focus.action, InvokeElementAction) and focus.action.element_id == 6
    assert focus.action.action == "focus"
    assert keys.action is not None and keys.action.kind == "press_key"
    assert [s["kind"] for s in diag(out)["steps"]] == ["focus", "press_key"]


async def test_an_element_and_a_point_together_are_refused(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    out = await act(runtime, "press_key", state_id=state, keys=["a"], element_id=6, x=1, y=2)
    assert diag(out)["code"] == "invalid_request" and fake.executes() == []
    out = await act(runtime, "type_text", state_id=state, text="a", x=1)
    assert diag(out)["code"] == "invalid_request" and fake.executes() == []


# ---------------------------------------------------------------------- dialogs and windows


SAVE_AS = """\
- dialog "Save As" [1]
  - textField "Name" [focused] [2]
  - button "Cancel" [3]
  - button "Save" [4]"""


async def test_a_dialog_the_action_opened_is_the_state_the_result_carries(
    fake: FakeKernel, runtime: Runtime
) -> None:
    """The dialog is a window of its own: the result observes it once more and hands out its
    state (with a stateId), not the window under it, which it blocks."""
    state = await look(runtime)
    base = editor()
    dialog = base.dialog("0x1a00050", "Save As", modal=True)
    fake.then(Outcome.ok(base.with_(others=(dialog,))))
    fake.queue(base.dialog_screen(dialog, SAVE_AS))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert (
        'A dialog of this window opened: "Save As" (window 0x1a00050). The state after this '
        "action is the dialog's"
    ) in out.text
    assert "takes the window's input" in out.text  # it is modal
    assert 'Window=(title="Save As", id=0x1a00050)' in out.text
    d = diag(out)
    assert d["stateIdIssued"] and d["observationOutcome"] == "available"
    assert "notReusable" not in d and "code" not in d  # a window opened: not a no-op
    (looked,) = fake.since(mark, "observe")
    assert looked.target is not None and looked.target.window_id == "0x1a00050"
    assert fake.since(mark, "windows") == []  # the windows came with the post state
    # the dialog's state acts on the dialog
    mark = fake.mark()
    fake.then(Outcome.ok(base.dialog_screen(dialog, SAVE_AS.replace('"Name"', '"Name" = "a"'))))
    typed = await act(runtime, "click", state_id=state_id_of(out), element_id=3)
    assert not typed.is_error, typed.text
    assert fake.since(mark, "execute")[0].frame_id == looked.issued


async def test_a_dialog_is_found_by_listing_when_the_post_state_lacks_windows(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    base = editor()
    dialog = base.dialog("0x1a00050", "Save As")
    fake.then(Outcome.ok(base.with_(others=(dialog,)), post_windows=False))
    fake.queue(base.dialog_screen(dialog, SAVE_AS))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert "A dialog of this window opened" in out.text and diag(out)["stateIdIssued"]
    assert "takes the window's input" not in out.text  # not modal
    assert [r.method for r in fake.since(mark, "execute", "windows", "observe")] == [
        "execute",
        "windows",
        "observe",
    ]


async def test_a_dialog_that_cannot_be_observed_is_told_and_the_state_is_not_reusable(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    base = editor()
    fake.then(Outcome.ok(base.with_(others=(base.dialog("0x1a00050", "Save As"),))))
    fake.observe_failures.append(ErrorCode.TARGET_NOT_FOUND)  # closed again at once
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert 'A dialog of this window opened: "Save As" (window 0x1a00050), but it' in out.text
    d = diag(out)
    assert d["notReusable"] == ["dialog_opened"] and not d["stateIdIssued"]
    assert "code" not in d


async def test_closing_a_dialog_gives_the_window_now_in_front() -> None:
    """A dialog's Cancel closes the window acted on: the result carries the window it was a
    dialog of, with a stateId, instead of target_not_found."""
    base = editor()
    dialog = base.dialog("0x1a00050", "Save As", modal=True)
    fake = FakeKernel(base.dialog_screen(dialog, SAVE_AS))
    runtime = Runtime(fake, snapshots=None, config=RuntimeConfig())
    try:
        state = await look(runtime, "0x1a00050")
        fake.then(Outcome.ok(base, post=False))  # the dialog window is gone
        fake.observe_failures.append(ErrorCode.TARGET_NOT_FOUND)
        mark = fake.mark()
        out = await act(runtime, "click", state_id=state, element_id=3)
        assert not out.is_error, out.text
        assert (
            'The window acted on ("Save As", window 0x1a00050) closed. The window now in front '
            'of the app is "Untitled 1 - Mousepad" (window 0x1a00003)'
        ) in out.text
        assert 'Window=(title="Untitled 1 - Mousepad", id=0x1a00003)' in out.text
        d = diag(out)
        assert d["stateIdIssued"] and d["observationOutcome"] == "available"
        assert "observationCode" not in d
        failed, front = fake.since(mark, "observe")
        assert failed.outcome == "target_not_found"
        assert front.target is not None and front.target.window_id == "0x1a00003"
    finally:
        await runtime.close()


async def test_a_closed_window_whose_app_shows_no_other_says_so() -> None:
    base = editor()
    dialog = base.dialog("0x1a00050", "Save As")
    fake = FakeKernel(base.dialog_screen(dialog, SAVE_AS))
    runtime = Runtime(fake, snapshots=None, config=RuntimeConfig())
    try:
        state = await look(runtime, "0x1a00050")
        other = Screen('- window "Other" [1]', pid=777, app="gedit", window_id="0x2200001")
        fake.then(Outcome.ok(other, post=False))  # the app quit; another app is left
        fake.observe_failures.append(ErrorCode.TARGET_NOT_FOUND)
        out = await act(runtime, "click", state_id=state, element_id=3)
        assert "closed, and its app shows no other window now" in out.text
        d = diag(out)
        assert d["observationOutcome"] == "unavailable" and not d["stateIdIssued"]
    finally:
        await runtime.close()


async def test_without_a_post_state_the_window_is_observed_and_listed_once(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.ok(editor(EDITOR_TYPED), post=False))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert not out.is_error and diag(out)["stateIdIssued"]
    after = fake.since(mark, "observe", "windows")
    assert [r.method for r in after] == ["observe", "windows"] and after[0].screenshot is True


async def test_a_new_window_of_the_same_app_is_told_and_not_reusable(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    base = editor()
    fake.then(Outcome.ok(base.with_(others=(base.sibling("0x1a00090", "Untitled 2"),))))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=3)
    assert 'A new window of this app opened: "Untitled 2" (window 0x1a00090)' in out.text
    assert "A dialog of this window opened" not in out.text
    assert "window_opened" in diag(out)["notReusable"]
    assert fake.since(mark, "windows") == []


@pytest.mark.parametrize("modal", [False, True])
async def test_a_dialog_open_before_the_action_is_not_told_as_opened(modal: bool) -> None:
    """The window under a dialog, observed by its id: a non-modal dialog (a Find window)
    leaves it usable; a modal one takes its input, which the next state says
    (``modal_dialog_open``) rather than handing out a stateId keys would miss."""
    base = editor()
    with_dialog = base.with_(others=(base.dialog("0x1a00050", "Save As", modal=modal),))
    fake = FakeKernel(with_dialog)
    runtime = Runtime(fake, snapshots=None, config=RuntimeConfig())
    try:
        state = await look(runtime, "0x1a00003")  # the window under the dialog, by its id
        fake.then(Outcome.ok(with_dialog.with_(tree=EDITOR_TYPED)))
        out = await act(runtime, "click", state_id=state, element_id=3)
        assert "A dialog of this window opened" not in out.text
        if modal:
            assert diag(out)["notReusable"] == ["modal_dialog_open"]
        else:
            assert "notReusable" not in diag(out) and diag(out)["stateIdIssued"]
    finally:
        await runtime.close()


async def test_another_focused_window_of_the_app_is_no_reason_against_reuse() -> None:
    """It was called popup_or_menu_open where no popup existed (a second Thunar window, a
    dialog LibreOffice focused): keys go to the window acted on, the host focuses it first."""
    base = editor()
    other = base.sibling("0x1a00090", "Untitled 2")
    two = base.with_(under=(other,))
    fake = FakeKernel(two)
    runtime = Runtime(fake, snapshots=None, config=RuntimeConfig())
    try:
        state = await look(runtime)
        fake.then(Outcome.ok(two.with_(tree=EDITOR_TYPED, foreground=other)))
        out = await act(runtime, "click", state_id=state, element_id=3)
        assert "notReusable" not in diag(out) and diag(out)["stateIdIssued"], out.text
    finally:
        await runtime.close()


async def test_a_window_of_another_app_is_not_a_new_window_of_this_one(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    base = editor()
    stranger = Screen('- window "Other" [1]', pid=777, app="gedit", window_id="0x2200001")
    fake.then(Outcome.ok(base.with_(others=(stranger.window(),), tree=EDITOR_TYPED)))
    out = await act(runtime, "click", state_id=state, element_id=3)
    assert "A new window" not in out.text and "A dialog" not in out.text
    assert diag(out)["stateIdIssued"] and "notReusable" not in diag(out)


# ---------------------------------------------------------------------- outcomes and refusals


async def test_an_action_that_may_have_run_is_never_retried(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.ACTION_TIMEOUT))
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=4)
    d = diag(out)
    assert d["code"] == "action_timeout" and d["actionOutcome"] == "unknown"
    assert d["retryable"] is False and "may have run" in d["message"]
    assert len(fake.since(mark, "execute")) == 1 and fake.since(mark, "observe") == []
    # the stateId is spent: the same call is refused before anything is sent
    mark = fake.mark()
    again = await act(runtime, "click", state_id=state, element_id=4)
    assert diag(again)["code"] == "state_id_invalid" and fake.since(mark, "execute") == []


async def test_a_refusal_before_dispatch_gives_the_state_id_back(
    fake: FakeKernel, runtime: Runtime
) -> None:
    state = await look(runtime)
    fake.then(Outcome.fail(ErrorCode.ACTION_BLOCKED, details={"reason": "sensitive_field"}))
    out = await act(runtime, "click", state_id=state, element_id=4)
    d = diag(out)
    assert d["code"] == "action_blocked" and d["actionOutcome"] == "not_dispatched"
    again = await act(runtime, "click", state_id=state, element_id=4)
    assert not again.is_error, again.text
    blocked, done = fake.executes()
    assert blocked.outcome == "action_blocked" and done.outcome == "ok"
    assert done.frame_id == blocked.frame_id == "f1"  # the same state, the same frame
    assert "healed" not in diag(again)


@pytest.mark.parametrize(
    ("code", "details"),
    [
        (ErrorCode.ACTUATOR_LEASE_CONFLICT, {}),
        (ErrorCode.SESSION_NOT_EXECUTABLE, {"state": "paused", "refusedBy": "session_state"}),
    ],
)
async def test_a_refusal_of_the_moment_gives_the_state_id_back(
    fake: FakeKernel, runtime: Runtime, code: ErrorCode, details: dict[str, Any]
) -> None:
    """Another task holds the desktop, or a person paused the session from outside: nothing
    was sent, so the same state_id acts once the desktop is free again."""
    state = await look(runtime)
    fake.then(Outcome.fail(code, details=details, consumes=False))
    out = await act(runtime, "click", state_id=state, element_id=4)
    assert diag(out)["code"] == code.value and diag(out)["actionOutcome"] == "not_dispatched"
    again = await act(runtime, "click", state_id=state, element_id=4)
    assert not again.is_error, again.text
    assert [r.frame_id for r in fake.executes()] == ["f1", "f1"]


async def test_a_pause_keeps_a_takeover_until_resume(fake: FakeKernel, runtime: Runtime) -> None:
    await look(runtime)
    await runtime.call("takeover", {}, agent_session=AGENT)
    assert runtime.status(AGENT)["session"]["takenOver"] is True
    await runtime.call("pause", {}, agent_session=AGENT)
    assert runtime.status(AGENT)["session"]["takenOver"] is True
    await runtime.call("resume", {}, agent_session=AGENT)
    assert runtime.status(AGENT)["session"]["takenOver"] is False


async def test_an_invalid_element_id_costs_nothing(fake: FakeKernel, runtime: Runtime) -> None:
    state = await look(runtime)
    mark = fake.mark()
    out = await act(runtime, "click", state_id=state, element_id=99)
    assert diag(out)["code"] == "invalid_request" and fake.since(mark, "execute") == []
    ok = await act(runtime, "click", state_id=state, element_id=4)
    assert not ok.is_error, ok.text


# ---------------------------------------------------------------------- redaction


SECRET = Rect(x=100, y=100, width=200, height=60)


def _pixel(jpeg: bytes, xy: tuple[int, int]) -> tuple[int, int, int]:
    img = Image.open(io.BytesIO(jpeg)).convert("RGB")
    r, g, b = img.getpixel(xy)
    return r, g, b


def _near(a: tuple[int, ...], b: tuple[int, ...], tol: int = 12) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("redact", [True, False])
async def test_the_post_state_frame_paints_secure_regions_out_only_when_redacting(
    redact: bool,
) -> None:
    color = (200, 30, 30)
    fake = FakeKernel(editor(), settings_model=SettingsModel(redact_sensitive_content=redact))
    runtime = Runtime(fake, snapshots=None, config=RuntimeConfig())
    try:
        state = await look(runtime)
        # the action leaves a password prompt over a HiDPI (2x) capture of the window
        secret = editor(EDITOR_TYPED, color=color, scale=2, sensitive=(SECRET,))
        fake.then(Outcome.ok(secret))
        out = await act(runtime, "click", state_id=state, element_id=4)
        assert out.image is not None and (out.image.width, out.image.height) == (1600, 1200)
        source = Image.open(io.BytesIO(solid_png(1600, 1200, color))).convert("RGB")
        inside = (2 * (SECRET.x + SECRET.width // 2), 2 * (SECRET.y + SECRET.height // 2))
        outside = (2 * (SECRET.x + SECRET.width) + 20, inside[1])
        src_in = source.getpixel(inside)
        assert isinstance(src_in, tuple)
        assert _near(_pixel(out.image.jpeg, outside), color)
        if redact:
            assert _near(_pixel(out.image.jpeg, inside), (128, 128, 128))
            assert not _near(_pixel(out.image.jpeg, inside), src_in)
        else:
            assert _near(_pixel(out.image.jpeg, inside), src_in)
    finally:
        await runtime.close()


async def test_a_session_cancelled_at_the_host_is_replaced_on_its_next_use(
    fake: FakeKernel, runtime: Runtime
) -> None:
    """A bounded budget that ran out mid-call cancels the session at the host (which refuses
    it for good); status still shows it, and the agent's next call gets a fresh one."""
    await look(runtime)
    sess = runtime.ctx.sessions.get(AGENT)
    assert sess is not None
    old = sess.session_id
    sess.host_cancelled = True
    assert runtime.status(AGENT)["session"]["sessionId"] == old
    await look(runtime)
    new = runtime.ctx.sessions.get(AGENT)
    assert new is not None and new.session_id != old
    stops = fake.trace("stop")
    assert [(r.session, r.outcome) for r in stops] == [(old, "budget_expired")]
