"""The settings page in a real browser (Playwright on Debian's Chromium) against a real
``deskpilot ui`` process and, for the image test, a real ``deskpilot serve`` on the private
desktop with a real GTK password dialog.

Every value is read back from the database the page wrote; the image test decrypts what the
vault stored. The page's controls come from the settings model itself, so a field added to
the model without a control or without its messages fails here.
"""

from __future__ import annotations

import base64
import io
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.oversight import settings_form as sf
from deskpilot.oversight.i18n import TABLE
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings, SettingsModel
from serve_kit import http_server

from .settings_kit import McpThread, error_code, text_of, xtest_type
from .uikit import ARTIFACTS, UiServer, shot

GREY = (128, 128, 128)


@pytest.fixture
def db() -> Iterator[Database]:
    """The session's database (the one ``ui_server`` serves); every setting back to its
    default afterwards, so no other test sees what this one set."""
    database = Database()
    Settings.reset(database)
    yield database
    Settings.reset(database)
    database.close()


def _open(page: Any, ui_server: UiServer) -> None:
    page.goto(f"{ui_server.base_url}/settings")
    assert page.locator("#settings-form").is_visible()


def _all_controls() -> list[sf.Control]:
    out: list[sf.Control] = []
    for c in sf.controls():
        out.extend(c.children or (c,))
    return out


def test_every_setting_has_a_control_and_its_explanations(
    ui_server: UiServer, logged_in: Any, db: Database
) -> None:
    page = logged_in
    _open(page, ui_server)
    # the page lists every field of the model, each with a control of the right kind
    shown = page.locator("[data-setting]").evaluate_all("els => els.map(e => e.dataset.setting)")
    assert sorted(shown) == sorted((f.alias or n) for n, f in SettingsModel.model_fields.items()), (
        shown
    )
    for control in _all_controls():
        field = page.locator(f'[name="{control.name}"]:not([type="hidden"])')
        assert field.count() == 1, control.name
        tag = field.evaluate("e => e.tagName.toLowerCase() + ':' + (e.type || '')")
        expected = {
            "checkbox": "input:checkbox",
            "number": "input:number",
            "mib": "input:number",
            "select": "select:select-one",
            "chord": "input:text",
            "lines": "textarea:textarea",
        }[control.kind]
        assert tag == expected, (control.name, tag)
    # numbers carry the model's own limits
    timeout = page.locator('[name="confirmationTimeoutSeconds"]')
    assert (timeout.get_attribute("min"), timeout.get_attribute("max")) == ("5", "3600")
    retention = page.locator('[name="evidenceRetentionDays"]')
    assert (retention.get_attribute("min"), retention.get_attribute("max")) == ("0", "3650")
    assert page.locator('[name="vaultQuotaBytes"]').get_attribute("min") == "16"
    assert page.locator('[name="vaultQuotaBytes"]').input_value() == "1024"
    options = page.locator('[name="requireConfirmationAbove"] option').evaluate_all(
        "els => els.map(e => e.value)"
    )
    assert options == ["off", "L0", "L1", "L2", "L3"]
    # every control has a label, a one-line explanation and (top level) who reads it, in
    # both languages
    for control in sf.controls():
        keys = [f"{control.message_key}.label", f"{control.message_key}.help"]
        keys.append(f"{control.message_key}.who")
        keys += [f"{c.message_key}.{part}" for c in control.children for part in ("label", "help")]
        for key in keys:
            assert key in TABLE and all(TABLE[key]), key
        block = page.locator(f'[data-setting="{control.name}"]')
        assert TABLE[f"{control.message_key}.help"][0] in block.inner_text()
        assert "Read by:" in block.inner_text()
    shot(page, "settings")

    # the same page in Chinese
    page.click("#lang-switch")
    page.wait_for_url("**/settings")
    assert "启用电脑操作" in page.locator('[data-setting="enabled"]').inner_text()
    assert "读取方" in page.locator('[data-setting="killSwitch"]').inner_text()
    shot(page, "settings-zh")
    page.click("#lang-switch")
    page.wait_for_url("**/settings")
    assert "Computer use enabled" in page.locator('[data-setting="enabled"]').inner_text()


def _new_value(control: sf.Control, default: SettingsModel) -> tuple[str | bool, Any]:
    """A valid value other than the default: (what to enter, what the model then holds)."""
    if control.kind == "checkbox":
        if control.attr:
            now = getattr(getattr(default, control.field), control.attr)
        else:
            now = getattr(default, control.field)
        return (not now), (not now)
    value = getattr(default, control.field)
    if control.kind == "number":
        new = value + 1 if control.maximum is None or value < control.maximum else value - 1
        return str(new), new
    if control.kind == "mib":
        return "64", 64 * sf.MIB
    if control.kind == "select":
        choice = next(c for c in control.choices if c != value)
        return choice, choice
    if control.kind == "chord":
        return "ctrl+alt+k", "ctrl+alt+k"
    if control.kind == "lines":
        return "gnome-calculator\nMousepad\n\nmousepad", ["gnome-calculator", "Mousepad"]
    raise AssertionError(control.kind)


def _enter(page: Any, control: sf.Control, value: str | bool) -> None:
    selector = f'[name="{control.name}"]:not([type="hidden"])'
    if control.kind == "checkbox":
        page.locator(selector).set_checked(bool(value))
    elif control.kind == "select":
        page.locator(selector).select_option(str(value))
    else:
        page.locator(selector).fill(str(value))


def _stored(db: Database, control: sf.Control) -> Any:
    value = getattr(Settings.load(db), control.field)
    return getattr(value, control.attr) if control.attr else value


def test_each_control_changes_its_setting_and_reset_restores_the_default(
    ui_server: UiServer, logged_in: Any, db: Database
) -> None:
    page = logged_in
    _open(page, ui_server)
    defaults = Settings.defaults()
    wanted: dict[str, Any] = {}
    for control in _all_controls():
        entered, held = _new_value(control, defaults)
        _enter(page, control, entered)
        wanted[control.name] = held
    with page.expect_navigation() as nav:
        page.click("#settings-save")
    assert nav.value is not None and nav.value.ok  # the 303 landed on the page again
    assert "/settings?saved=" in page.url
    for control in _all_controls():
        assert _stored(db, control) == wanted[control.name], control.name
    # the page says what was saved, and shows the saved values
    status = page.locator("#settings-saved").inner_text()
    assert status.startswith("Saved:") and "Kill-switch chord" in status
    assert page.locator(".saved-badge").count() == len(sf.controls())
    assert page.locator('[name="killSwitch"]').input_value() == "ctrl+alt+k"
    assert page.locator('[name="vaultQuotaBytes"]').input_value() == "64"
    assert page.locator('[name="allowedApps"]').input_value() == "gnome-calculator\nMousepad"
    shot(page, "settings-saved")

    # Save again with nothing changed: nothing is written
    revision = Settings.revision(db)
    with page.expect_navigation():
        page.click("#settings-save")
    assert page.locator("#settings-saved").inner_text() == "Nothing changed."
    assert Settings.revision(db) == revision

    # Reset one field: its row is gone and the default applies again
    with page.expect_navigation():
        page.click("#reset-killSwitch-button")
    assert Settings.load(db).kill_switch == "ctrl+shift+Escape"
    assert db.query("SELECT key FROM settings WHERE key = 'killSwitch'") == []
    assert page.locator('[name="killSwitch"]').input_value() == "ctrl+shift+Escape"
    assert "back to its default" in page.locator("#settings-saved").inner_text()
    assert page.locator("#reset-killSwitch-button").count() == 0
    # the others kept their values
    assert Settings.load(db).vault_quota_bytes == 64 * sf.MIB


@pytest.mark.parametrize(
    ("name", "bad", "reason"),
    [
        ("killSwitch", "ctrl+nosuchkey", "Unknown key “nosuchkey”"),
        ("killSwitch", "hyper+k", "Unknown modifier “hyper”"),
        ("evidenceRetentionDays", "-1", "between 0 and 3650"),
        ("confirmationTimeoutSeconds", "1.5", "whole number from 5 to 3600"),
        ("vaultQuotaBytes", "8", "at least 16 MiB"),
    ],
)
def test_invalid_values_are_refused_with_the_reason_and_nothing_is_saved(
    ui_server: UiServer, logged_in: Any, db: Database, name: str, bad: str, reason: str
) -> None:
    page = logged_in
    _open(page, ui_server)
    before = Settings.load(db)
    revision = Settings.revision(db)
    # a valid change beside the bad one: neither is saved, both are kept on the page
    page.locator('[name="enabled"][type="checkbox"]').set_checked(False)
    page.locator(f'[name="{name}"]').fill(bad)
    with page.expect_navigation() as nav:
        page.click("#settings-save")
    assert nav.value is not None and nav.value.status == 400
    fid = name.replace(".", "-")
    error = page.locator(f"#error-{fid}")
    assert reason in error.inner_text(), error.inner_text()
    assert page.locator(f'[data-setting="{name}"] #error-{fid}').count() == 1  # next to it
    assert page.locator("#settings-refused").is_visible()
    assert page.locator(".field-error").count() == 1
    assert page.locator(f'[name="{name}"]').input_value() == bad  # what the person typed
    assert not page.locator('[name="enabled"][type="checkbox"]').is_checked()
    assert Settings.load(db) == before and Settings.revision(db) == revision
    if name == "killSwitch" and bad == "ctrl+nosuchkey":
        shot(page, "settings-refused")


def test_refusals_in_chinese(ui_server: UiServer, browser: Any, db: Database) -> None:
    from .uikit import start_ui

    server = start_ui()
    try:
        context = browser.new_context(locale="zh-CN")
        page = context.new_page()
        page.goto(server.login_url)
        page.goto(f"{server.base_url}/settings")
        page.locator('[name="killSwitch"]').fill("ctrl+nosuchkey")
        page.locator('[name="vaultQuotaBytes"]').fill("1")
        with page.expect_navigation() as nav:
            page.click("#settings-save")
        assert nav.value is not None and nav.value.status == 400
        assert "未知的按键“nosuchkey”" in page.locator("#error-killSwitch").inner_text()
        assert "配额至少为 16 MiB" in page.locator("#error-vaultQuotaBytes").inner_text()
        assert "未保存任何内容" in page.locator("#settings-refused").inner_text()
        shot(page, "settings-refused-zh")
        context.close()
    finally:
        server.stop()
    assert Settings.load(db) == Settings.defaults()


# ---------------------------------------------------------------------- the stored image


@pytest.fixture
def password_dialog(dp_desktop: Any) -> Iterator[App]:
    """A real GTK password entry with text typed into it (through XTEST, as a keyboard)."""
    app = launch_accessible(["zenity", "--password", "--title=Unlock"], capture_stdout=True)
    xtest_type(dp_desktop.display, "hunter2secret", into_window_of_pid=app.pid)
    yield app
    app.stop()


def _stored_image(snapshot_id: str) -> Image.Image:
    """Decrypt the stored original of a snapshot, in this process, from the shared vault."""
    from deskpilot.vault.service import SnapshotService
    from deskpilot.vault.store import Vault

    service = SnapshotService(Database(), Vault.open())
    return Image.open(io.BytesIO(service.read_blob(snapshot_id, "image"))).convert("RGB")


def _region_colours(img: Image.Image, region: list[int]) -> set[tuple[int, int, int]]:
    x, y, w, h = region
    crop = img.crop((x, y, x + w, y + h))
    return {c for _, c in crop.getcolors(maxcolors=w * h + 1) or []}


def _model_frame_grey(
    client: McpThread, pid: int, regions: list[list[int]], size: tuple[int, int]
) -> bool:
    """Whether the ``screenshot`` tool's image (the model frame, a JPEG) is grey in the middle
    of every region (given in the stored original's pixels)."""
    shot_result = client.call("screenshot", {"app": pid})
    assert not shot_result.is_error, text_of(shot_result)[:1000]
    image = next(c for c in shot_result.content if c.type == "image")
    model = Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")
    sx, sy = model.width / size[0], model.height / size[1]
    for x, y, w, h in regions:
        px = model.getpixel((int((x + w / 2) * sx), int((y + h / 2) * sy)))
        assert isinstance(px, tuple)
        if not all(abs(c - 128) <= 12 for c in px[:3]):
            return False
    return True


def test_redact_setting_changes_the_stored_image(
    ui_server: UiServer, logged_in: Any, db: Database, password_dialog: App
) -> None:
    page = logged_in
    # a file key: this process decrypts what serve stored (no keyring on a test machine)
    env = {"DESKPILOT_VAULT_KEY_STORAGE": os.environ.get("DESKPILOT_VAULT_KEY_STORAGE", "file")}
    with http_server(env) as serve:
        client = McpThread(serve)
        try:
            # on (the default): the password field is one uniform grey in the stored image
            first = client.call("capture_app_snapshot", {"app": password_dialog.pid})
            assert not first.is_error, text_of(first)[:2000]
            data = json.loads(text_of(first).split("\n\n")[0])
            redaction = data["redaction"]
            assert redaction["applied"] is True and redaction["redactSensitiveContent"] is True
            regions = redaction["imageRegions"]
            assert regions and all(r[2] > 4 and r[3] > 4 for r in regions), regions
            painted = _stored_image(data["snapshotId"])
            for region in regions:
                assert _region_colours(painted, region) == {GREY}, region
            assert _model_frame_grey(client, password_dialog.pid, regions, painted.size)

            # off, switched in the dashboard (another process than the one that stores)
            _open(page, ui_server)
            page.locator('[name="redactSensitiveContent"][type="checkbox"]').set_checked(False)
            with page.expect_navigation():
                page.click("#settings-save")
            assert Settings.load(db).redact_sensitive_content is False
            assert "Paint out password fields" in page.locator("#settings-saved").inner_text()

            second = client.call("capture_app_snapshot", {"app": password_dialog.pid})
            assert not second.is_error, text_of(second)[:2000]
            data2 = json.loads(text_of(second).split("\n\n")[0])
            assert data2["redaction"]["applied"] is False
            assert data2["redaction"]["redactSensitiveContent"] is False
            assert data2["redaction"]["reasonCodes"] == ["redaction_disabled_by_setting"]
            assert data2["redaction"]["secureRegionCount"] >= 1
            plain = _stored_image(data2["snapshotId"])
            assert plain.size == painted.size
            ARTIFACTS.mkdir(parents=True, exist_ok=True)  # both stored images, decrypted
            painted.save(ARTIFACTS / "settings-stored-redacted.png")
            plain.save(ARTIFACTS / "settings-stored-unredacted.png")
            for region in regions:
                colours = _region_colours(plain, region)
                assert colours != {GREY}, region  # no longer painted over
                assert len(colours) > 1  # the field, its frame and the typed dots show
                x, y, w, h = region
                box = (x, y, x + w, y + h)
                assert plain.crop(box).tobytes() != painted.crop(box).tobytes()
            # the model's image follows too, once the server's settings cache has seen it
            time.sleep(1.2)
            assert not _model_frame_grey(client, password_dialog.pid, regions, painted.size)

            # and on again: painted again, without restarting anything
            _open(page, ui_server)
            page.locator('[name="redactSensitiveContent"][type="checkbox"]').set_checked(True)
            with page.expect_navigation():
                page.click("#settings-save")
            third = client.call("capture_app_snapshot", {"app": password_dialog.pid})
            data3 = json.loads(text_of(third).split("\n\n")[0])
            assert data3["redaction"]["applied"] is True
            for region in data3["redaction"]["imageRegions"]:
                assert _region_colours(_stored_image(data3["snapshotId"]), region) == {GREY}
            assert error_code(third) is None
        finally:
            client.close()
