"""The policy from real signals: every effect class, L3/L4 and the unknown-target rule are
reachable from realistic trees; the contract denies with reason codes."""

from __future__ import annotations

from deskpilot.kernel.policy import evaluate, policy_context_for
from deskpilot.protocol.session import (
    DataClass,
    Decision,
    EffectClass,
    RiskLevel,
    TargetKind,
    TaskContract,
    UserPresence,
)
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import (
    ClickAction,
    InvokeElementAction,
    Observation,
    Point,
    PressKeyAction,
    Rect,
    ScrollAction,
    TreeRead,
    TypeTextAction,
)
from deskpilot.store.settings import SettingsModel

from . import trees
from .backends import screen

S = SettingsModel()
C = TaskContract()


def test_tree_parser_reads_roles_states_ancestry_and_escaped_names() -> None:
    t = parse_tree(trees.DELETE_DIALOG)
    delete = t.get(5)
    assert delete is not None and delete.role == "button" and delete.name == "Delete"
    assert [a.key for a in t.ancestors(delete)] == ["alert", "window"]
    alert = t.get(2)
    assert alert is not None and alert.name == 'Permanently delete "notes.txt"?'
    assert "modal" in alert.states
    focused = parse_tree(trees.PASSWORD_DIALOG).focused()
    assert focused is not None and focused.key == "passwordfield" and "secure" in focused.states


def test_scroll_is_read_only_l0() -> None:
    d = evaluate(ScrollAction(direction="down", element_id=6), screen(trees.EDITOR), C, S)
    assert (d.risk, d.decision, d.reason) == (RiskLevel.L0, Decision.ALLOW, "read_only_action")
    assert d.context.effect == EffectClass.READ_ONLY


def test_plain_typing_into_an_editor_is_l1_public() -> None:
    d = evaluate(TypeTextAction(text="hello world"), screen(trees.EDITOR), C, S)
    assert d.risk == RiskLevel.L1 and d.context.effect == EffectClass.REVERSIBLE_LOCAL
    assert d.context.data_classes == {DataClass.PUBLIC}
    assert d.context.target_kind == TargetKind.ELEMENT  # the focused text element


def test_destructive_button_in_a_dialog_is_high_impact_l3() -> None:
    obs = screen(trees.DELETE_DIALOG, app="nautilus")
    d = evaluate(ClickAction(element_id=5), obs, C, S)
    assert d.context.effect == EffectClass.HIGH_IMPACT and d.risk == RiskLevel.L3
    assert "destructive_control_in_dialog" in d.context.signals
    # the same verb outside a dialog is not L3; "Cancel" in the dialog is not either
    assert evaluate(ClickAction(element_id=7), obs, C, S).risk == RiskLevel.L1
    assert evaluate(InvokeElementAction(element_id=4), obs, C, S).risk == RiskLevel.L1
    # expanding/focusing a destructive control does not activate it
    focus = InvokeElementAction(element_id=5, action="focus")
    assert evaluate(focus, obs, C, S).risk == RiskLevel.L1


def test_typing_into_a_password_field_is_restricted_l4_and_denied_by_default_contract() -> None:
    obs = screen(trees.PASSWORD_DIALOG, app="zenity")
    d = evaluate(TypeTextAction(text="hunter2", element_id=3), obs, C, S)
    assert d.context.effect == EffectClass.RESTRICTED and d.risk == RiskLevel.L4
    assert DataClass.CREDENTIAL in d.context.data_classes
    # the default contract does not allow credentials: denied with a reason code
    assert (d.decision, d.reason) == (Decision.DENY, "data_class_not_allowed")
    allowed = TaskContract(allowed_data_classes=[DataClass.PUBLIC, DataClass.CREDENTIAL])
    ok = evaluate(TypeTextAction(text="hunter2", element_id=3), obs, allowed, S)
    assert ok.decision == Decision.ALLOW and ok.risk == RiskLevel.L4


def test_keys_pressed_into_a_focused_password_field_are_a_credential_write() -> None:
    obs = screen(trees.PASSWORD_DIALOG, app="zenity")  # the password field has the focus
    for keys in (["h", "u", "n"], ["shift+H"], ["ctrl+v"], ["shift+Insert"], ["space"]):
        d = evaluate(PressKeyAction(keys=keys), obs, C, S)
        assert d.context.effect == EffectClass.RESTRICTED and d.risk == RiskLevel.L4, keys
        assert (d.decision, d.reason) == (Decision.DENY, "data_class_not_allowed"), keys
        assert "credential_field" in d.context.signals
    # moving on, confirming or erasing puts no secret anywhere
    for keys in (["Tab"], ["BackSpace"], ["ctrl+a"], ["Left", "End"], ["Escape"]):
        d = evaluate(PressKeyAction(keys=keys), obs, C, S)
        assert d.decision == Decision.ALLOW and d.risk <= RiskLevel.L2, keys


def test_secret_looking_text_is_l4_anywhere() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    d = evaluate(TypeTextAction(text=f"export TOKEN={token}"), screen(trees.EDITOR), C, S)
    assert d.risk == RiskLevel.L4 and "secret_like_text" in d.context.signals
    assert evaluate(TypeTextAction(text="meeting at 10"), screen(trees.EDITOR), C, S).risk == 1


def test_point_inside_a_sensitive_region_is_a_credential_target() -> None:
    # the window is at (100, 50) 800x600; the region covers its middle
    obs = screen(trees.EDITOR, sensitive=[Rect(x=400, y=300, width=200, height=40)])
    ctx = policy_context_for(ClickAction(point=Point(x=0.5, y=0.45)), obs)
    assert ctx.sensitive_target and ctx.target_kind == TargetKind.COORDINATES


def test_send_button_and_enter_in_a_web_form_are_external_writes_l2() -> None:
    obs = screen(trees.BROWSER_FORM, app="chromium", url="https://example.com/contact")
    click = evaluate(ClickAction(element_id=6), obs, C, S)
    assert click.context.effect == EffectClass.EXTERNAL_WRITE and click.risk == RiskLevel.L2
    enter = evaluate(PressKeyAction(keys=["Return"]), obs, C, S)
    assert enter.context.effect == EffectClass.EXTERNAL_WRITE
    assert "enter_submit_in_web_form" in enter.context.signals
    # Return in a desktop editor is just a newline
    assert evaluate(PressKeyAction(keys=["Return"]), screen(trees.EDITOR), C, S).risk == 1


def test_personal_data_typed_locally_is_at_least_l2() -> None:
    obs = screen(trees.BROWSER_FORM, app="chromium", url="https://example.com/contact")
    d = evaluate(TypeTextAction(text="ada@example.org", element_id=4), obs, C, S)
    assert DataClass.PERSONAL in d.context.data_classes and d.risk == RiskLevel.L2


def test_unknown_targets_are_at_least_l2() -> None:
    missing = evaluate(ClickAction(element_id=99), screen(trees.EDITOR), C, S)
    assert missing.context.target_kind == TargetKind.UNKNOWN and missing.risk == RiskLevel.L2
    blind = evaluate(ClickAction(point=Point(x=0.2, y=0.2)), screen(trees.EMPTY), C, S)
    assert blind.context.target_kind == TargetKind.UNKNOWN and blind.risk == RiskLevel.L2
    known = evaluate(ClickAction(point=Point(x=0.2, y=0.2)), screen(trees.EDITOR), C, S)
    assert known.context.target_kind == TargetKind.COORDINATES and known.risk == RiskLevel.L1


#: an OCR outline (kernel/visual_tree.py) of a chat window with no accessibility tree
OUTLINE = (
    '- window "Chat" [1]\n  - block [2]\n    - text "Send" [3]\n'
    '    - text "Permanently delete" [4]\n'
)


def visual(tree: str = OUTLINE) -> Observation:
    return screen(tree).model_copy(update={"tree_read": TreeRead(source="visual")})


def test_an_element_or_a_point_of_a_visual_tree_is_an_unknown_target_at_least_l2() -> None:
    """OCR'd "Send" is no control: acting on it rates as on the tree-less window it
    outlines (coordinates_on_unknown_surface), never lower."""
    for action in (
        ClickAction(element_id=3),
        ClickAction(point=Point(x=0.2, y=0.2)),
        InvokeElementAction(element_id=3, action="activate"),
        ScrollAction(direction="down", point=Point(x=0.5, y=0.5)),
    ):
        d = evaluate(action, visual(), C, S)
        assert d.context.target_kind == TargetKind.UNKNOWN, action
        assert d.risk >= RiskLevel.L2 and "visual_tree" in d.context.signals, action
    # the same text as accessibility elements would be known targets, L1
    assert evaluate(ClickAction(element_id=3), screen(OUTLINE), C, S).risk == RiskLevel.L1
    # what the words say still counts: an irreversible one is L3
    assert evaluate(ClickAction(element_id=4), visual(), C, S).risk == RiskLevel.L3
    # keys and text go to the window, rated as on the tree-less window
    keys = evaluate(PressKeyAction(keys=["Return"]), visual(), C, S)
    assert keys.context.target_kind == TargetKind.WINDOW and keys.risk == RiskLevel.L1
    assert "visual_tree" not in keys.context.signals


def test_an_activating_invoke_on_a_visual_tree_rates_as_the_click_sent_for_it() -> None:
    click = evaluate(ClickAction(element_id=3), visual(), C, S)
    for name in (None, "activate", "press"):
        d = evaluate(InvokeElementAction(element_id=3, action=name), visual(), C, S)
        assert (d.risk, d.context.effect, d.context.target_kind, d.context.signals) == (
            click.risk,
            click.context.effect,
            click.context.target_kind,
            click.context.signals,
        )


def test_credential_app_is_restricted() -> None:
    d = evaluate(ClickAction(element_id=6), screen(trees.EDITOR, app="keepassxc"), C, S)
    assert d.risk == RiskLevel.L4 and "credential_app" in d.context.signals


def test_contract_allowed_apps_domains_and_forbidden_actions_deny_with_reasons() -> None:
    editor = screen(trees.EDITOR)
    only_calc = TaskContract(allowed_apps=["gnome-calculator"])
    d = evaluate(TypeTextAction(text="x"), editor, only_calc, S)
    assert (d.decision, d.reason) == (Decision.DENY, "app_not_allowed")
    assert evaluate(TypeTextAction(text="x"), editor, TaskContract(allowed_apps=["Mousepad"]), S)
    assert (
        evaluate(
            TypeTextAction(text="x"), editor, TaskContract(allowed_apps=["Mousepad"]), S
        ).decision
        == Decision.ALLOW
    )  # WM_CLASS class part, case-insensitive
    assert (
        evaluate(TypeTextAction(text="x"), editor, TaskContract(allowed_apps=["mouse"]), S).reason
        == "app_not_allowed"
    )  # never a substring
    web = screen(trees.BROWSER_FORM, app="chromium", url="https://shop.example.net/cart")
    doms = TaskContract(allowed_domains=["*.example.com", "example.com"])
    assert evaluate(ScrollAction(direction="down"), web, doms, S).reason == "domain_not_allowed"
    ok = screen(trees.BROWSER_FORM, app="chromium", url="https://www.example.com/")
    assert evaluate(ScrollAction(direction="down"), ok, doms, S).decision == Decision.ALLOW
    hidden = screen(trees.BROWSER_FORM, app="chromium", url=None)
    assert evaluate(ScrollAction(direction="down"), hidden, doms, S).reason == "domain_unknown"
    no_keys = TaskContract(forbidden_actions=["press_key"])
    d = evaluate(PressKeyAction(keys=["ctrl+s"]), editor, no_keys, S)
    assert (d.decision, d.reason, d.details) == (
        Decision.DENY,
        "forbidden_action",
        {"entry": "press_key"},
    )
    no_ext = TaskContract(forbidden_actions=["external_write", "key:ctrl+q"])
    assert evaluate(ClickAction(element_id=6), web, no_ext, S).reason == "forbidden_action"
    assert evaluate(PressKeyAction(keys=["Ctrl+Q"]), editor, no_ext, S).reason == "forbidden_action"
    settings_apps = SettingsModel(allowed_apps=["gedit"])
    d = evaluate(TypeTextAction(text="x"), editor, C, settings_apps)
    assert d.reason == "app_not_allowed" and d.details["source"] == "settings"


def test_user_presence_and_confirmation_setting_require_approval() -> None:
    editor = screen(trees.EDITOR)
    dialog = screen(trees.DELETE_DIALOG, app="nautilus")
    supervised = TaskContract(user_presence=UserPresence.SUPERVISED)
    d = evaluate(TypeTextAction(text="x"), editor, supervised, S)
    assert (d.decision, d.reason, d.requires_user_presence) == (
        Decision.REQUIRE_APPROVAL,
        "user_presence_supervised",
        True,
    )
    assert evaluate(ScrollAction(direction="up"), editor, supervised, S).decision == "allow"
    required = TaskContract(user_presence=UserPresence.REQUIRED)
    assert evaluate(TypeTextAction(text="x"), editor, required, S).decision == Decision.ALLOW
    assert evaluate(ClickAction(element_id=5), dialog, required, S).reason == (
        "user_presence_required"
    )
    above_l2 = SettingsModel(require_confirmation_above="L2")
    d = evaluate(ClickAction(element_id=5), dialog, C, above_l2)
    assert (d.decision, d.reason) == (Decision.REQUIRE_APPROVAL, "confirmation_required")
    assert evaluate(ClickAction(element_id=7), dialog, C, above_l2).decision == Decision.ALLOW


def test_focus_mismatch_is_a_hard_deny_and_the_kill_chord_is_refused() -> None:
    from deskpilot.protocol.wire import TargetSpec

    obs = screen(trees.EDITOR)
    d = evaluate(ScrollAction(direction="up"), obs, C, S, bound=TargetSpec(window_id="0x99"))
    assert (d.decision, d.reason) == (Decision.DENY, "focus_mismatch")
    d = evaluate(ScrollAction(direction="up"), obs, C, S, expected_app="gedit")
    assert d.reason == "focus_mismatch"
    assert (
        evaluate(
            ScrollAction(direction="up"), obs, C, S, bound=TargetSpec(window_id="0x1A00003")
        ).decision
        == Decision.ALLOW
    )
    kill = evaluate(PressKeyAction(keys=["Control+Shift+Escape"]), obs, C, S)
    assert (kill.decision, kill.reason) == (Decision.DENY, "kill_switch_chord")
