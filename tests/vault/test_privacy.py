"""The credential-app blocklist: exact identity, never substring."""

from __future__ import annotations

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.privacy import (
    CREDENTIAL_APPS,
    assert_capture_allowed,
    blocked_identity,
    is_capture_allowed,
)
from deskpilot.protocol.wire import AppIdentity


@pytest.mark.parametrize(
    "app",
    [
        AppIdentity(executable="seahorse"),
        AppIdentity(executable="/usr/bin/keepassxc"),
        AppIdentity(executable="/usr/bin/KeePassXC"),
        AppIdentity(executable="/usr/lib/policykit-1-gnome/polkit-gnome-authentication-agent-1"),
        AppIdentity(executable="/usr/libexec/polkit-kde-authentication-agent-1"),
        AppIdentity(executable="lxpolkit"),
        AppIdentity(executable="mate-polkit"),
        AppIdentity(executable="/usr/bin/pinentry-gtk-2"),
        AppIdentity(executable="pinentry-gnome3"),
        AppIdentity(executable="pinentry-qt"),
        AppIdentity(executable="pinentry-curses"),
        AppIdentity(executable="/usr/libexec/gcr-prompter"),
        AppIdentity(executable="gcr-viewer"),
        AppIdentity(executable="/usr/lib/openssh/ssh-askpass"),
        AppIdentity(executable="ksshaskpass"),
        AppIdentity(executable="kwalletmanager5"),
        AppIdentity(executable="bitwarden"),
        AppIdentity(executable="1password"),
        AppIdentity(executable="enpass"),
        AppIdentity(executable="C:\\Program Files\\KeePass\\KeePass.exe"),
        AppIdentity(executable="mono", wm_class="keepass2"),
        AppIdentity(executable="electron", wm_class="Bitwarden"),
        AppIdentity(executable="python3", wm_class="gcr-prompter\0Gcr-prompter"),
        AppIdentity(desktop_id="org.keepassxc.KeePassXC.desktop"),
        AppIdentity(desktop_id="/usr/share/applications/org.gnome.seahorse.Application.desktop"),
        AppIdentity(desktop_id="com.bitwarden.desktop"),
        AppIdentity(name="Seahorse"),
    ],
)
def test_credential_apps_are_blocked(app: AppIdentity) -> None:
    assert not is_capture_allowed(app)
    with pytest.raises(DeskpilotError) as err:
        assert_capture_allowed(app)
    assert err.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
    assert err.value.details["reason"] == "credential_app"
    assert err.value.details["identity"] in CREDENTIAL_APPS


@pytest.mark.parametrize(
    "app",
    [
        AppIdentity(),
        AppIdentity(executable="mousepad", wm_class="mousepad", name="Mousepad"),
        AppIdentity(executable="gnome-calculator", desktop_id="org.gnome.Calculator.desktop"),
        AppIdentity(executable="chromium", wm_class="chromium"),
        # substrings and look-alikes never match
        AppIdentity(executable="keepass-notes"),
        AppIdentity(executable="my-bitwarden-cli-wrapper"),
        AppIdentity(executable="pinentryx"),
        AppIdentity(executable="seahorse2"),
        AppIdentity(name="Passwords in my notes"),
        AppIdentity(wm_class="1password-helper-docs"),
        AppIdentity(desktop_id="org.example.keepassxc-themes.desktop"),
    ],
)
def test_other_apps_are_allowed(app: AppIdentity) -> None:
    assert is_capture_allowed(app)
    assert blocked_identity(app) is None
    assert_capture_allowed(app)


def test_list_is_lower_case_and_covers_each_family() -> None:
    assert all(name == name.lower() for name in CREDENTIAL_APPS)
    for family in (
        "gnome-keyring-daemon",
        "seahorse",
        "polkit-gnome-authentication-agent-1",
        "pinentry",
        "keepassxc",
        "bitwarden",
        "1password",
        "ssh-askpass",
        "kwalletmanager5",
    ):
        assert family in CREDENTIAL_APPS
