"""The verification engine on synthetic trees (the host's exact rendered format,
host/atspi/render.py: ``- role "name" = "value" [state]… [id]``, two spaces per level), with
duplicates for every match policy; the browser page; application state from windows;
criteria derivation; the model's own claim only where there is no tree."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import TaskContract
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.verification import (
    AccessibilitySpec,
    ApplicationStateSpec,
    DomSpec,
    ElementSelector,
    FileSpec,
    VerificationReason,
    VerificationSpec,
    VisualSpec,
)
from deskpilot.protocol.wire import AppIdentity, Observation, Rect, Truncation, WindowInfo
from deskpilot.runtime.verification import (
    Evidence,
    Verdict,
    check_specs,
    derive_criteria,
    goal_quotes,
    overall,
    parse_specs,
    verify,
)

# A form with duplicates: two "Email" fields, two "OK" buttons (one disabled).
FORM = "\n".join(
    [
        '- window "Sign up" [1]',
        '  - dialog "Create account" [modal] [2]',
        '    - label "Email" [3]',
        '    - textField "Email" = "ann@example.com" [focused] [4]',
        '    - textField "Email" = "" [5]',
        '    - passwordField "Password" [secure] [6]',
        '    - checkBox "Subscribe" [checked] [7]',
        '    - button "OK" [8]',
        '    - button "OK" [disabled] [9]',
        '    - button "Cancel" [10]',
        '    - label "Status: \\"saved\\" at 10:04" [11]',
        '    - slider "Volume" = "50.0" [12]',
        '  - list "Files" [13]',
        "    - listItem [14]",
        '      - label "report.txt" [15]',
        '  - treeItem "Docs" [collapsed] [actions: activate, expand or contract] [16]',
    ]
)

BROWSER = "\n".join(
    [
        '- window "Bench page - Chromium" [1]',
        "  - toolbar [2]",
        '    - button "Back" [disabled] [3]',
        '    - textField "Address and search bar" = "127.0.0.1:8000/index.html" [4]',
        '  - document "Bench page" [focused] [5]',
        '    - heading "Items" [6]',
        '    - textField "Query" = "abc" [7]',
        '    - link "Item 0" [8]',
    ]
)

TRUNCATED = "\n".join(
    [
        '- window "Big list" [1]',
        '  - list "Rows" [2]',
        '    - listItem "Row 1" [3]',
        "    - … 1,234 more items",
        "[truncated: 48 elements omitted]",
    ]
)

SIGNUP_APP = AppIdentity(
    pid=4242,
    name="signup",
    executable="zenity",
    wm_class="zenity\0Zenity",
    desktop_id="org.example.Signup.desktop",
)
MOUSEPAD = AppIdentity(
    pid=5151, name="Mousepad", executable="mousepad", desktop_id="org.xfce.mousepad"
)


def window(
    wid: str = "0x1",
    title: str = "Sign up",
    app: AppIdentity = SIGNUP_APP,
    *,
    focused: bool = False,
    minimized: bool = False,
) -> WindowInfo:
    return WindowInfo(
        window_id=wid,
        title=title,
        bounds=Rect(x=0, y=0, width=400, height=300),
        app=app,
        focused=focused,
        minimized=minimized,
    )


def observation(
    tree: str = FORM,
    *,
    title: str = "Sign up",
    app: AppIdentity = SIGNUP_APP,
    foreground: AppIdentity | None = None,
    url: str | None = None,
    truncation: Truncation | None = None,
    minimized: bool = False,
) -> Observation:
    count = sum(1 for line in tree.splitlines() if line.strip().startswith("- "))
    return Observation(
        id=1,
        frame_id="f1",
        tree_version="v1",
        app=app,
        window=window("0x1", title, app, focused=foreground is None, minimized=minimized),
        foreground_app=foreground,
        tree=tree,
        element_count=count,
        truncation=truncation or Truncation(),
        url=url,
    )


def state(
    tree: str = FORM, *, windows: list[WindowInfo] | None = None, **kw: object
) -> ObservedState:
    obs = observation(tree, **kw)  # type: ignore[arg-type]
    return ObservedState(obs, None, tuple(windows) if windows is not None else None)


def evidence(st: ObservedState | None, *, ready: bool = False, windows: Any = None) -> Evidence:
    return Evidence(state=st, windows=windows, task_started_at=0.0, model_ready=ready)


async def one(spec: VerificationSpec, st: ObservedState | None, **kw: Any) -> Verdict:
    (v,) = await verify([spec], evidence(st, **kw), allow_external_readback=False)
    return v


def a11y(assertion: str, *, match: str = "any", expected: str | None = None, **sel: Any) -> Any:
    return AccessibilitySpec(
        selector=ElementSelector(**sel), assertion=assertion, expected=expected, match=match
    )


# ------------------------------------------------------------------ the tree parser's values


def test_parser_reads_values_unescaped_and_keeps_names_states_ids() -> None:
    t = parse_tree(FORM)
    field = t.get(4)
    assert field is not None
    assert (field.role, field.name, field.value) == ("textField", "Email", "ann@example.com")
    assert "focused" in field.states
    empty = t.get(5)
    assert empty is not None and empty.value == ""
    assert t.get(8) is not None and t.get(8).value is None  # type: ignore[union-attr]
    status = t.get(11)
    assert status is not None and status.name == 'Status: "saved" at 10:04'
    esc = parse_tree('- textField "Note" = "a \\"b\\"\\nc\\u00e9" [3]').get(3)
    assert esc is not None and esc.value == 'a "b"\nc\u00e9'


# ------------------------------------------------------------------ accessibility: policies


@pytest.mark.parametrize(
    ("match", "name", "want"),
    [
        ("any", "OK", True),  # two OK buttons: any one is enough
        ("all", "OK", True),  # both exist
        ("only", "OK", False),  # a duplicate is not "the only match"
        ("only", "Cancel", True),
        ("any", "Nope", False),
        ("all", "Nope", False),  # no match is never "all passed"
        ("only", "Nope", False),
    ],
)
async def test_exists_under_each_match_policy_with_duplicates(
    match: str, name: str, want: bool
) -> None:
    v = await one(a11y("exists", match=match, role="button", name=name), state())
    assert v.passed is want
    assert v.reason == (
        VerificationReason.ASSERTION_PASSED if want else VerificationReason.ASSERTION_FAILED
    )
    assert v.evidence["matched"] == {"OK": 2, "Cancel": 1, "Nope": 0}[name]


@pytest.mark.parametrize(("match", "want"), [("any", True), ("all", False), ("only", False)])
async def test_enabled_over_an_enabled_and_a_disabled_duplicate(match: str, want: bool) -> None:
    v = await one(a11y("enabled", match=match, role="button", name="OK"), state())
    assert v.passed is want
    assert v.evidence["satisfied"] == 1 and v.evidence["matched"] == 2
    assert any("[disabled]" in line for line in v.evidence["elements"])


async def test_selector_states_narrow_duplicates_to_the_only_match() -> None:
    spec = a11y("enabled", match="only", role="button", name="OK", not_states=["disabled"])
    v = await one(spec, state())
    assert v.passed is True and v.evidence["matched"] == 1
    checked = a11y("exists", match="only", role="checkBox", states=["checked"])
    assert (await one(checked, state())).passed is True
    unchecked = a11y("exists", role="checkBox", not_states=["checked"])
    assert (await one(unchecked, state())).passed is False


@pytest.mark.parametrize(("match", "want"), [("any", True), ("all", False), ("only", False)])
async def test_focused_and_value_equals_over_duplicate_fields(match: str, want: bool) -> None:
    focused = await one(a11y("focused", match=match, role="textField", name="Email"), state())
    assert focused.passed is want
    value = a11y("value_equals", match=match, expected="ann@example.com", name="Email")
    # the label "Email" matches the name too, and has no value: any still passes, all fails
    assert (await one(value, state())).passed is want


async def test_value_equals_reads_numbers_and_refuses_to_guess_secrets_or_cut_values() -> None:
    assert (await one(a11y("value_equals", expected="50", role="slider"), state())).passed
    assert (await one(a11y("value_equals", expected="51", role="slider"), state())).passed is False
    secret = await one(a11y("value_equals", expected="hunter2", role="passwordField"), state())
    assert secret.passed is None and secret.reason == VerificationReason.UNSUPPORTED_EVIDENCE
    shown = "x" * 200
    cut = f'- window "W" [1]\n  - textField "Long" = "{shown}…" [2]'
    longer = a11y("value_equals", expected=shown + "yz", role="textField")
    assert (await one(longer, state(cut))).passed is None
    other = a11y("value_equals", expected="y" * 250, role="textField")
    assert (await one(other, state(cut))).passed is False


async def test_text_contains_reads_the_element_and_what_is_below_it() -> None:
    v = await one(a11y("text_contains", expected="REPORT.TXT", role="list", name="Files"), state())
    assert v.passed is True
    miss = a11y("text_contains", expected="budget.ods", role="list", name="Files")
    assert (await one(miss, state())).passed is False


async def test_exact_name_role_key_name_contains_and_inside() -> None:
    exact = a11y("exists", role="label", name='Status: "saved" at 10:04')
    assert (await one(exact, state())).passed is True
    assert (await one(a11y("exists", role="label", name="Status"), state())).passed is False
    assert (await one(a11y("exists", role="TEXT_FIELD", name_contains="mai"), state())).passed
    in_dialog = a11y("exists", role="button", name="Cancel", inside={"role": "dialog"})
    assert (await one(in_dialog, state())).passed is True
    in_list = a11y("exists", role="button", inside={"role": "list", "name": "Files"})
    assert (await one(in_list, state())).passed is False
    action_tags = a11y("exists", match="only", role="treeItem", states=["collapsed"])
    assert (await one(action_tags, state())).passed is True


async def test_visible_is_false_in_a_minimized_window() -> None:
    spec = a11y("visible", role="button", name="Cancel")
    assert (await one(spec, state())).passed is True
    assert (await one(spec, state(minimized=True))).passed is False
    iconified = '- window "W" [minimized] [1]\n  - button "A" [2]'
    assert (await one(a11y("visible", role="button"), state(iconified))).passed is False


async def test_an_incomplete_tree_proves_presence_but_not_absence() -> None:
    st = state(TRUNCATED, truncation=Truncation(omitted_elements=48, text_budget_hit=True))
    present = await one(a11y("exists", role="listItem", name="Row 1"), st)
    assert present.passed is True
    absent = await one(a11y("exists", role="listItem", name="Row 900"), st)
    assert absent.passed is None and absent.evidence["treeComplete"] is False
    assert absent.evidence["omittedElements"] == 48
    only = await one(a11y("exists", match="only", role="listItem", name="Row 1"), st)
    assert only.passed is None  # another "Row 1" may be among the omitted
    every = await one(a11y("exists", match="all", role="listItem"), st)
    assert every.passed is None and every.evidence["satisfied"] == 1  # the rest are unseen
    # the marker and the elision line alone mark it incomplete, even without the counts
    bare = await one(a11y("exists", role="listItem", name="Row 900"), state(TRUNCATED))
    assert bare.passed is None
    marker_only = '- window "W" [1]\n  - button "A" [2]\n[truncated: 3 elements omitted]'
    cut = await one(a11y("exists", role="button", name="B"), state(marker_only))
    assert cut.passed is None
    elision_only = '- window "W" [1]\n  - list [2]\n    - … 12 more items'
    elided = await one(a11y("exists", role="listItem"), state(elision_only))
    assert elided.passed is None and elided.evidence["matched"] == 0  # the line is no element


async def test_no_tree_is_undecidable_for_accessibility_even_when_the_model_is_ready() -> None:
    v = await one(a11y("exists", role="button"), state(""), ready=True)
    assert v.passed is None and v.reason == VerificationReason.UNSUPPORTED_EVIDENCE
    nothing = await one(a11y("exists", role="button"), None)
    assert nothing.passed is None


def test_accessibility_spec_shapes_are_checked() -> None:
    with pytest.raises(ValidationError, match="at least one"):
        ElementSelector()
    with pytest.raises(ValidationError, match="needs 'expected'"):
        a11y("value_equals", role="slider")
    with pytest.raises(ValidationError, match="takes no 'expected'"):
        a11y("exists", role="slider", expected="1")
    with pytest.raises(ValidationError, match="extra"):
        AccessibilitySpec.model_validate(
            {"selector": {"role": "button"}, "assertion": "exists", "matchPolicy": "any"}
        )
    spec = AccessibilitySpec.model_validate(
        {"selector": {"nameContains": "ok", "notStates": ["disabled"]}, "assertion": "exists"}
    )
    assert spec.match == "any" and spec.selector.not_states == ["disabled"]


# ------------------------------------------------------------------ visual


@pytest.mark.parametrize(
    ("assertion", "text", "want"),
    [
        ("text_present", "report.TXT", True),
        ("text_present", "ann@example.com", True),  # values are text on screen too
        ("text_present", "sign  UP", True),  # the window title; whitespace folded
        ("text_present", "Upload failed", False),
        ("text_absent", "Upload failed", True),
        ("text_absent", "Cancel", False),
    ],
)
async def test_visual_over_the_tree_text(assertion: str, text: str, want: bool) -> None:
    v = await one(VisualSpec(assertion=assertion, text=text), state())  # type: ignore[arg-type]
    assert v.passed is want


async def test_visual_on_an_incomplete_tree_cannot_prove_absence() -> None:
    st = state(TRUNCATED)
    assert (await one(VisualSpec(assertion="text_present", text="Row 1"), st)).passed is True
    missing = await one(VisualSpec(assertion="text_present", text="Row 900"), st)
    assert missing.passed is None
    absent = await one(VisualSpec(assertion="text_absent", text="Row 900"), st)
    assert absent.passed is None


async def test_visual_without_a_tree_says_no_ocr_yet() -> None:
    v = await one(VisualSpec(assertion="text_present", text="Total: 42"), state(""))
    assert v.passed is None and v.reason == VerificationReason.UNSUPPORTED_EVIDENCE
    assert "OCR" in v.evidence["undecidable"] and v.evidence["elementCount"] == 0
    title = await one(VisualSpec(assertion="text_present", text="sign up"), state(""))
    assert title.passed is True and title.evidence["seenIn"] == "window title"


# ------------------------------------------------------------------ model_visual_assertion


async def test_model_claim_counts_only_for_visual_without_any_tree() -> None:
    spec = VisualSpec(assertion="text_present", text="Total: 42")
    claimed = await one(spec, state(""), ready=True)
    assert claimed.passed is True
    assert claimed.reason == VerificationReason.MODEL_VISUAL_ASSERTION
    assert "model's own claim" in claimed.evidence["claim"]
    # not ready: undecidable
    assert (await one(spec, state(""))).passed is None
    # a tree: the tree decides, the model's word is not asked
    with_tree = await one(spec, state(), ready=True)
    assert with_tree.passed is False and with_tree.reason == VerificationReason.ASSERTION_FAILED
    # a tree that is only incomplete: still the tree's call (undecidable), not the model's
    partial = await one(spec, state(TRUNCATED), ready=True)
    assert partial.passed is None and partial.reason == VerificationReason.UNSUPPORTED_EVIDENCE
    # no observation at all: nothing the model can have seen either
    assert (await one(spec, None, ready=True)).passed is None
    # evidence against the claim stays a failure: the title shows what must be absent
    against = await one(VisualSpec(assertion="text_absent", text="Sign up"), state(""), ready=True)
    assert against.passed is False and against.reason == VerificationReason.ASSERTION_FAILED


# ------------------------------------------------------------------ dom


BROWSER_URL = "http://127.0.0.1:8000/index.html"


@pytest.mark.parametrize(
    ("assertion", "expected", "want"),
    [
        ("url_equals", BROWSER_URL, True),
        ("url_equals", BROWSER_URL + "/", True),
        ("url_equals", "http://127.0.0.1:8000/other.html", False),
        ("url_contains", "INDEX.html", True),
        ("url_contains", "login", False),
        ("title_contains", "bench", True),
        ("title_contains", "Checkout", False),
        ("text_contains", "item 0", True),
        ("text_contains", "abc", True),
        ("text_contains", "Back", False),  # the toolbar is not the page
    ],
)
async def test_dom_on_a_browser_page(assertion: str, expected: str, want: bool) -> None:
    st = state(BROWSER, title="Bench page - Chromium", url=BROWSER_URL)
    v = await one(DomSpec(assertion=assertion, expected=expected), st)  # type: ignore[arg-type]
    assert v.passed is want
    assert v.evidence["documents"] == 1


async def test_dom_off_a_browser_page_is_undecidable() -> None:
    v = await one(DomSpec(assertion="title_contains", expected="Sign"), state())
    assert v.passed is None and "not a browser page" in v.evidence["undecidable"]
    no_url = state(BROWSER, title="Bench page - Chromium")
    url = await one(DomSpec(assertion="url_contains", expected="index"), no_url)
    assert url.passed is None and "no URL" in url.evidence["undecidable"]
    assert (await one(DomSpec(assertion="title_contains", expected="Bench"), no_url)).passed


# ------------------------------------------------------------------ application state


CALC = AppIdentity(
    pid=6161,
    name="Calculator",
    executable="gnome-calculator",
    wm_class="gnome-calculator\0Gnome-calculator",
    desktop_id="org.gnome.Calculator.desktop",
)
DESKTOP = [
    window("0x1", "Sign up", SIGNUP_APP, focused=True),
    window("0x2", "Untitled 1 - Mousepad", MOUSEPAD),
    window("0x3", "Calculator", CALC),
]


@pytest.mark.parametrize(
    ("app", "expected", "want"),
    [
        ("zenity", True, True),
        ("ORG.EXAMPLE.SIGNUP", True, True),  # desktop id, without .desktop, any case
        ("4242", True, True),  # the pid as text
        ("mousepad", True, False),
        ("mousepad", False, True),
        (None, True, True),  # the observed app
    ],
)
async def test_frontmost(app: str | None, expected: bool, want: bool) -> None:
    spec = ApplicationStateSpec(assertion="frontmost", app=app, expected=expected)
    st = state(foreground=SIGNUP_APP, windows=DESKTOP)
    assert (await one(spec, st)).passed is want


async def test_frontmost_from_the_window_list_and_unknown_without_one() -> None:
    spec = ApplicationStateSpec(assertion="frontmost", app="Gnome-calculator")
    focused_calc = [window("0x3", "Calculator", CALC, focused=True)]
    assert (await one(spec, None, windows=focused_calc)).passed is True
    assert (await one(spec, None, windows=[window("0x3", "Calculator", CALC)])).passed is None


@pytest.mark.parametrize(
    ("assertion", "app", "text", "expected", "want"),
    [
        ("window_exists", "gnome-calculator", None, True, True),
        ("window_exists", "firefox", None, True, False),
        ("window_exists", "firefox", None, False, True),
        ("window_exists", None, None, True, True),
        ("window_title_contains", "mousepad", "untitled", True, True),
        ("window_title_contains", "mousepad", "notes.txt", True, False),
        ("window_title_contains", "mousepad", "notes.txt", False, True),
        ("window_title_contains", "firefox", "Inbox", True, False),  # no window: nothing holds it
        ("window_title_contains", None, "sign", True, True),
    ],
)
async def test_windows(
    assertion: str, app: str | None, text: str | None, expected: bool, want: bool
) -> None:
    spec = ApplicationStateSpec(
        assertion=assertion,  # type: ignore[arg-type]
        app=app,
        text=text,
        expected=expected,
    )
    assert (await one(spec, state(windows=DESKTOP))).passed is want


async def test_windows_without_a_list_decide_only_what_the_observation_shows() -> None:
    exists = ApplicationStateSpec(assertion="window_exists", app="zenity")
    assert (await one(exists, state())).passed is True  # the observed window is one
    other = ApplicationStateSpec(assertion="window_exists", app="mousepad", expected=False)
    assert (await one(other, state())).passed is None
    title = ApplicationStateSpec(assertion="window_title_contains", app="zenity", text="Inbox")
    assert (await one(title, state())).passed is None  # another zenity window may hold it


async def test_an_app_is_named_by_either_wm_class_part() -> None:
    app = AppIdentity(pid=77, executable="python3", wm_class="mypyapp\0MyPyApp")
    st = state(app=app, foreground=app)
    for name in ("MyPyApp", "mypyapp", "python3", "77"):
        assert (await one(ApplicationStateSpec(assertion="frontmost", app=name), st)).passed
    assert (await one(ApplicationStateSpec(assertion="frontmost", app="MyPy"), st)).passed is False


def test_application_state_spec_shapes() -> None:
    with pytest.raises(ValidationError, match="needs 'text'"):
        ApplicationStateSpec(assertion="window_title_contains", app="x")
    with pytest.raises(ValidationError, match="takes no 'text'"):
        ApplicationStateSpec(assertion="running", app="x", text="y")


# ------------------------------------------------------------------ engine: wire, overall, refusal


async def test_verdicts_are_json_with_camelcase_specs() -> None:
    spec = a11y("exists", role="button", name_contains="ok")
    v = await one(spec, state())
    out = json.loads(json.dumps(v.to_json()))
    assert out["spec"]["selector"] == {"role": "button", "nameContains": "ok", "states": [],
                                       "notStates": []}  # fmt: skip
    assert out["passed"] is True and out["reason"] == "assertion_passed"
    assert all(len(line) <= 160 for line in out["evidence"]["elements"])


async def test_overall_needs_one_verdict_and_every_one_passed() -> None:
    st = state()
    ok = VisualSpec(assertion="text_present", text="Cancel")
    bad = VisualSpec(assertion="text_present", text="nowhere")
    dom = DomSpec(assertion="url_contains", expected="x")  # undecidable here
    ev = evidence(st)
    assert overall(await verify([ok], ev, allow_external_readback=False)) is True
    assert overall(await verify([ok, bad], ev, allow_external_readback=False)) is False
    undecided = await verify([ok, dom], ev, allow_external_readback=False)
    assert [v.passed for v in undecided] == [True, None] and overall(undecided) is False
    assert overall([]) is False


def test_parse_specs_reads_camelcase_json_and_refuses_unknown_kinds_and_fields() -> None:
    specs = parse_specs(
        [
            {"kind": "visual", "assertion": "text_present", "text": "Done"},
            {"kind": "external_readback", "argv": ["/bin/true"], "timeoutMs": 200},
            {"kind": "file", "path": "/tmp/x", "assertion": "sha256", "expected": "a" * 64},
        ]
    )
    assert [s.kind for s in specs] == ["visual", "external_readback", "file"]
    for bad in (
        [{"kind": "ocr", "text": "x"}],
        [{"kind": "visual", "assertion": "text_present", "text": "x", "color": "red"}],
        [{"kind": "file", "path": "relative.txt", "assertion": "exists"}],
        [{"kind": "file", "path": "/x", "assertion": "sha256", "expected": "abc"}],
    ):
        with pytest.raises(DeskpilotError) as e:
            parse_specs(bad)
        assert e.value.code == ErrorCode.INVALID_REQUEST


def test_check_specs_accepts_every_decidable_kind() -> None:
    specs = TypeAdapter(list[VerificationSpec]).validate_python(
        [
            {"kind": "accessibility", "selector": {"role": "button"}, "assertion": "exists"},
            {"kind": "visual", "assertion": "text_absent", "text": "Error"},
            {"kind": "application_state", "assertion": "running", "app": "x", "expected": False},
            {"kind": "file", "path": "~/notes.txt", "assertion": "modified_after_start"},
            {"kind": "dom", "assertion": "url_contains", "expected": "example"},
        ]
    )
    check_specs(specs, allow_external_readback=False)  # raises on a spec it cannot decide
    contract = TaskContract(success_criteria=specs)
    assert [s.kind for s in contract.success_criteria] == [s.kind for s in specs]


# ------------------------------------------------------------------ derivation


def test_given_criteria_win() -> None:
    given = [FileSpec(path="/tmp/a", assertion="exists")]
    specs, source = derive_criteria('type "x"', ["Saved."], "mousepad", success_criteria=given)
    assert (specs, source) == (given, "success_criteria")


def test_acceptance_sentences_become_text_present() -> None:
    specs, source = derive_criteria(
        'Type "hello"', ["  The file is saved.", "", "Total: 42", "Total: 42."], "mousepad"
    )
    assert source == "acceptance_criteria"
    assert [(s.kind, s.assertion, s.text) for s in specs] == [  # type: ignore[union-attr]
        ("visual", "text_present", "The file is saved"),
        ("visual", "text_present", "Total: 42"),
    ]


def test_goal_quotes_in_every_supported_style() -> None:
    goal = (
        'Type “hello world”, press "Save", wait for 「完了」 '
        "and don't press 'Cancel' — it's «fine»"
    )
    assert goal_quotes(goal) == ["hello world", "Save", "完了", "Cancel", "fine"]
    specs, source = derive_criteria(goal, [], None)
    assert source == "goal_quotes" and len(specs) == 5
    assert all(isinstance(s, VisualSpec) and s.assertion == "text_present" for s in specs)


def test_no_words_mean_the_target_frontmost() -> None:
    specs, source = derive_criteria("compute two plus two", [], "gnome-calculator")
    assert source == "target_frontmost"
    assert specs == [ApplicationStateSpec(assertion="frontmost", app="gnome-calculator")]
    specs, _ = derive_criteria("don't stop", ["   "], None)
    assert specs == [ApplicationStateSpec(assertion="frontmost", app=None)]


async def test_an_app_is_named_by_its_executable_without_a_version_suffix() -> None:
    """As the runtime resolves ``app`` (protocol/app_names.py): ``gimp`` is ``gimp-2.10``."""
    gimp = AppIdentity(pid=78, executable="gimp-2.10", wm_class="gimp\0Gimp")
    win = [window("0x9", "GNU Image Manipulation Program", gimp, focused=True)]
    st = state(app=gimp, foreground=gimp, windows=win)
    for name in ("gimp", "gimp-2", "gimp-2.10"):
        spec = ApplicationStateSpec(assertion="window_exists", app=name)
        assert (await one(spec, st)).passed, name
    spec = ApplicationStateSpec(assertion="window_exists", app="gimp-3")
    assert (await one(spec, st)).passed is False
