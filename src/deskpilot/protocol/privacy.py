"""Which applications are never captured.

This rule lives in ``protocol`` because both sides enforce it: the host refuses to read the
tree or the pixels of such a window at all, and the main process checks every observation and
capture again before anything is returned, cached or stored.

Credential and authentication apps (keyrings, password managers, polkit agents, pinentry,
askpass helpers, lock screens and greeters) show secrets by design, so no capture path —
``capture_app_snapshot``, observe, evidence frames — may take a picture of them. The check
is an exact identity match, never a substring: ``"pinentry-gtk-2"`` blocks pinentry's GTK
prompt but an editor called ``"keepass-notes"`` is not blocked by ``"keepass"``. A substring
rule would both over-block ordinary apps and give a false sense of coverage; this list is a
floor for the obvious credential surfaces, not a guarantee about every window that could
show a password (that is what sensitive-region redaction is for).

Identity candidates, each lower-cased and compared whole:

* the executable basename (``/proc/PID/exe``; a Windows-style path is normalised too),
* the desktop id, with and without its ``.desktop`` suffix,
* the ``WM_CLASS`` instance (and class, when the host sends ``"instance\\0Class"``: every
  NUL-separated part counts),
* the accessibility application name.
"""

from __future__ import annotations

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import AppIdentity

#: Exact, lower-cased identities. Grouped by what they guard; order carries no meaning.
CREDENTIAL_APPS: frozenset[str] = frozenset(
    {
        # GNOME keyring and its viewers/prompters (the platform keychain)
        "gnome-keyring-daemon",
        "gnome-keyring-prompt",
        "seahorse",
        "org.gnome.seahorse.application",
        "gcr-prompter",
        "gcr-viewer",
        "gcr-viewer-gtk4",
        "gcr4-ssh-askpass",
        "org.gnome.keyring.systemprompter",
        # KDE wallet
        "kwalletd5",
        "kwalletd6",
        "ksecretd",
        "kwalletmanager",
        "kwalletmanager5",
        "org.kde.kwalletmanager5",
        "org.kde.kwalletmanager",
        # polkit authentication agents (the "consent" / credential UI of Linux desktops)
        "polkit-gnome-authentication-agent-1",
        "polkit-kde-authentication-agent-1",
        "org.kde.polkit-kde-authentication-agent-1",
        "polkit-mate-authentication-agent-1",
        "mate-polkit",
        "lxpolkit",
        "lxqt-policykit-agent",
        "xfce-polkit",
        "polkit-efl-authentication-agent-1",
        "hyprpolkitagent",
        "polkit-dumb-agent",
        "pkexec",
        # GnuPG pinentry variants
        "pinentry",
        "pinentry-gtk",
        "pinentry-gtk2",
        "pinentry-gtk-2",
        "pinentry-gnome3",
        "pinentry-qt",
        "pinentry-qt4",
        "pinentry-qt5",
        "pinentry-curses",
        "pinentry-tty",
        "pinentry-fltk",
        "pinentry-efl",
        "pinentry-x2go",
        "pinentry-emacs",
        # SSH askpass helpers
        "ssh-askpass",
        "ssh-askpass-gnome",
        "gnome-ssh-askpass",
        "ksshaskpass",
        "x11-ssh-askpass",
        "lxqt-openssh-askpass",
        "ssh-askpass-fullscreen",
        # su/sudo credential front ends
        "gksu",
        "gksudo",
        "kdesu",
        "kdesudo",
        "lxsudo",
        "lxqt-sudo",
        # password managers
        "keepassxc",
        "org.keepassxc.keepassxc",
        "keepassx",
        "keepass",
        "keepass2",
        "keepass.exe",
        "keepass2.exe",
        "bitwarden",
        "bitwarden.exe",
        "com.bitwarden.desktop",
        "1password",
        "1password.exe",
        "com.1password.1password",
        "enpass",
        "enpass.exe",
        "io.enpass.enpass",
        "secrets",
        "gnome-secrets",
        "org.gnome.world.secrets",
        "gnome-passwordsafe",
        "org.gnome.passwordsafe",
        "proton-pass",
        "me.proton.pass",
        "authenticator",
        "com.belmoussaoui.authenticator",
        # lock screens and display-manager greeters (the login window)
        "xscreensaver",
        "xscreensaver-auth",
        "light-locker",
        "i3lock",
        "xsecurelock",
        "slock",
        "xlock",
        "lightdm-gtk-greeter",
        "lightdm-slick-greeter",
        "slick-greeter",
        "unity-greeter",
        "gnome-screensaver",
        "cinnamon-screensaver",
        "mate-screensaver",
    }
)


def _basename(value: str) -> str:
    return value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _dotted_halves(wm_class: str) -> set[str]:
    """The instance of an ``"instance.Class"`` pair, as the host spells WM_CLASS on the wire.

    Only a split whose halves agree ignoring case counts (``"keepassxc.KeePassXC"`` →
    ``"keepassxc"``): instance names may contain dots themselves, so splitting anywhere else
    would invent identities."""
    out = set()
    for i, ch in enumerate(wm_class):
        if ch == "." and wm_class[:i] == wm_class[i + 1 :]:
            out.add(wm_class[:i])
    return out


def identity_candidates(app: AppIdentity) -> set[str]:
    """Every lower-cased identity the app is known by; each compared whole, never in part."""
    out: set[str] = set()
    if app.executable:
        out.add(_basename(app.executable.strip()).lower())
    if app.desktop_id:
        did = _basename(app.desktop_id.strip()).lower()
        out.add(did)
        if did.endswith(".desktop"):
            out.add(did[: -len(".desktop")])
    if app.wm_class:
        for part in app.wm_class.split("\0"):
            part = part.strip().lower()
            if part:
                out.add(part)
                out.update(_dotted_halves(part))
    if app.name:
        out.add(app.name.strip().lower())
    out.discard("")
    return out


def blocked_identity(app: AppIdentity) -> str | None:
    """The identity that puts ``app`` on the credential list, or None when it may be captured."""
    for candidate in sorted(identity_candidates(app)):
        if candidate in CREDENTIAL_APPS:
            return candidate
    return None


def is_capture_allowed(app: AppIdentity) -> bool:
    return blocked_identity(app) is None


def assert_capture_allowed(app: AppIdentity) -> None:
    """Raise ``sensitive_input_blocked`` for a credential app; call it on every capture path."""
    matched = blocked_identity(app)
    if matched is not None:
        raise DeskpilotError(
            ErrorCode.SENSITIVE_INPUT_BLOCKED,
            f"capturing {matched!r} is blocked: credential and authentication apps are never "
            "captured",
            details={"reason": "credential_app", "identity": matched},
        )


__all__ = [
    "CREDENTIAL_APPS",
    "assert_capture_allowed",
    "blocked_identity",
    "identity_candidates",
    "is_capture_allowed",
]
