"""Rate and decide an app launch (the ``open_app`` tool) before anything is spawned.

Starting a program is an action with an effect outside every window: a new process that runs
as the server's user. It gets a risk level like any other action, with the signal that set it
as the rating's reason code (docs/policy.md, "App launches"):

* L2 ``external_write`` — an installed desktop application: resolved through a system
  ``.desktop`` entry (``desktop_entry``), or an executable such an entry runs
  (``listed_gui_executable``), started with no arguments from the agent.
* L3 ``high_impact`` (a confirmation from the person) — any argument from the agent
  (``agent_arguments``); an executable no desktop entry runs (``unlisted_executable``) or one
  outside the standard bin dirs (``outside_standard_bin``); a user-writable desktop entry that
  adds its own arguments (``user_entry_arguments``); a terminal entry (``terminal_entry``); a
  terminal emulator with no arguments (``terminal_emulator``).
* L4 ``restricted`` (denied unless allowedApps names the program itself) — shells
  (``shell``), interpreters (``interpreter``), privilege tools (``privilege_tool``),
  programs that run another program given as an argument (``command_runner``), a terminal
  emulator given arguments (``terminal_command``), and arguments that make a browser run a
  program (``argument_runs_command``).

The program's name is checked as given and after symlinks are resolved (``/usr/bin/x-terminal-
emulator`` is the terminal it points to). ``env NAME=value program`` in a desktop entry is
rated as ``program``; ``env`` named by the agent is a command runner.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from deskpilot.kernel.policy.context import PolicyContext
from deskpilot.kernel.policy.contract import domain_reason, forbidden_entry
from deskpilot.kernel.policy.engine import (
    PolicyDecision,
    Reason,
    confirmation_threshold,
    decided,
)
from deskpilot.protocol.session import (
    Decision,
    EffectClass,
    RiskLevel,
    TargetKind,
    TaskContract,
    UserPresence,
)
from deskpilot.protocol.wire import AppIdentity
from deskpilot.store.settings import SettingsModel

LAUNCH_KIND = "open_app"

STANDARD_BIN_DIRS = frozenset(
    {
        "/usr/bin",
        "/bin",
        "/usr/local/bin",
        "/usr/games",
        "/usr/local/games",
        "/snap/bin",
        "/var/lib/flatpak/exports/bin",
    }
)
#: desktop entries only root can write; an entry elsewhere (the user's data home) is treated
#: like something the agent could have written
SYSTEM_ENTRY_DIRS = (
    "/usr/share/applications/",
    "/usr/local/share/applications/",
    "/var/lib/flatpak/exports/share/applications/",
    "/var/lib/snapd/desktop/applications/",
)

SHELLS = frozenset(
    {
        "sh", "bash", "rbash", "dash", "ash", "zsh", "fish", "ksh", "mksh", "pdksh", "oksh",
        "csh", "tcsh", "busybox", "elvish", "nu", "xonsh", "pwsh", "yash", "tmux", "screen",
    }
)  # fmt: skip
_INTERPRETER = re.compile(
    r"^(python|pypy|perl|ruby|irb|node|nodejs|deno|bun|php|lua|luajit|tclsh|wish|guile|"
    r"racket|rscript|r|julia|java|jshell|groovy|scala|expect|awk|gawk|mawk|nawk|busybox|"
    r"erl|escript|ghci|runghc|gdb|lldb|osascript|sqlite3|psql|mysql)[0-9.\-]*m?$"
)
PRIVILEGE_TOOLS = frozenset(
    {
        "sudo", "sudoedit", "su", "pkexec", "doas", "run0", "runuser", "gksu", "gksudo",
        "kdesu", "kdesudo", "beesu", "setpriv", "capsh", "chroot", "nsenter", "unshare",
        "systemd-run", "machinectl", "setcap", "sg", "newgrp", "xdg-su",
    }
)  # fmt: skip
COMMAND_RUNNERS = frozenset(
    {
        "env", "nohup", "nice", "ionice", "timeout", "setsid", "stdbuf", "xargs", "find",
        "time", "watch", "script", "flock", "chrt", "taskset", "strace", "ltrace",
        "dbus-launch", "dbus-run-session", "xvfb-run", "start-stop-daemon", "parallel", "at",
        "batch", "crontab", "ssh", "firejail", "bwrap", "flatpak-spawn", "systemd-cat",
        "xinit", "startx", "make", "git", "xdg-open", "gio", "exo-open", "kioclient",
        "kioclient5", "gtk-launch", "dex",
    }
)  # fmt: skip
TERMINALS = frozenset(
    {
        "xterm", "uxterm", "lxterm", "koi8rxterm", "x-terminal-emulator", "gnome-terminal",
        "gnome-terminal.wrapper", "kgx", "ptyxis", "konsole", "xfce4-terminal",
        "lxterminal", "mate-terminal", "terminator", "tilix", "kitty", "alacritty",
        "wezterm", "foot", "footclient", "urxvt", "urxvtc", "rxvt", "rxvt-unicode", "st",
        "sakura", "terminology", "qterminal", "zutty", "guake", "tilda", "yakuake",
        "cool-retro-term", "eterm", "aterm", "blackbox", "contour", "ghostty",
    }
)  # fmt: skip
#: browser switches whose value is a program the browser runs
_COMMAND_FLAGS = re.compile(
    r"^--(renderer-cmd-prefix|utility-cmd-prefix|gpu-launcher|browser-subprocess-path|"
    r"plugin-launcher|ppapi-plugin-launcher|nacl-gdb|gpu-sandbox-start-early)\b"
)
#: options by which an X, GTK, Qt or Chromium program picks its display or windowing system
#: (``--display=:0``, ``-display :0``, ``--screen``, Qt's ``-platform``, Chromium's
#: ``--ozone-platform``, ``--gdk-backend``): the launch's environment names the desktop the
#: session drives; an argument would put the app on another — the person's own display
DISPLAY_FLAGS = re.compile(
    r"-{1,2}(?:[a-z0-9-]*display|screen|platform|ozone-platform|gdk-backend)(?:=|$)", re.I
)
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class LaunchReason(enum.StrEnum):
    LAUNCH_RESTRICTED = "launch_restricted"
    LAUNCH_CONFIRMATION_REQUIRED = "launch_confirmation_required"


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What the runtime resolved the agent's ``app`` to; nothing of it has run yet."""

    #: the app as the agent named it (desktop id, executable, absolute path)
    app: str
    #: absolute path of the program to start
    program: str
    #: arguments from the desktop entry's Exec line (field codes removed)
    entry_args: tuple[str, ...] = ()
    #: arguments the agent passed
    agent_args: tuple[str, ...] = ()
    #: arguments deskpilot adds itself (accessibility switches); they are not rated
    own_args: tuple[str, ...] = ()
    #: the .desktop file it was resolved through, or one whose Exec runs this very program
    entry: str | None = None
    resolved_via_entry: bool = False
    #: the entry says Terminal=true (a console program, not a windowed one)
    entry_terminal: bool = False
    desktop_id: str | None = None

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.program, *self.entry_args, *self.own_args, *self.agent_args)

    @property
    def executable(self) -> str:
        return os.path.basename(self.program).lower()


@dataclass(frozen=True, slots=True)
class LaunchRating:
    risk: RiskLevel
    #: the signal that set the level first, then the others
    signals: tuple[str, ...] = field(default_factory=tuple)

    @property
    def rating(self) -> str:
        return self.signals[0] if self.signals else "desktop_entry"


_EFFECT = {
    RiskLevel.L2: EffectClass.EXTERNAL_WRITE,
    RiskLevel.L3: EffectClass.HIGH_IMPACT,
    RiskLevel.L4: EffectClass.RESTRICTED,
}


def _names(program: str) -> set[str]:
    names = {os.path.basename(program).lower()}
    with contextlib.suppress(OSError):
        names.add(os.path.basename(os.path.realpath(program)).lower())
    return names


def restricted_kind(name: str) -> str | None:
    """``shell`` / ``interpreter`` / ``privilege_tool`` / ``command_runner`` or None."""
    if name in SHELLS:
        return "shell"
    if name in PRIVILEGE_TOOLS:
        return "privilege_tool"
    if name in COMMAND_RUNNERS:
        return "command_runner"
    if _INTERPRETER.match(name):
        return "interpreter"
    return None


def _unwrap_env(program: str, args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """``env A=1 B=2 prog x`` (a common Exec line) → ``prog x``; env with options stays env."""
    if os.path.basename(program) != "env":
        return program, args
    rest = list(args)
    while rest and _ENV_ASSIGNMENT.match(rest[0]):
        rest.pop(0)
    if not rest or rest[0].startswith("-"):
        return program, args
    return rest[0], tuple(rest[1:])


def _system_entry(entry: str | None) -> bool:
    return entry is not None and os.path.abspath(entry).startswith(SYSTEM_ENTRY_DIRS)


def rate_launch(req: LaunchRequest) -> LaunchRating:
    program, entry_args = req.program, req.entry_args
    if req.resolved_via_entry:
        program, entry_args = _unwrap_env(program, entry_args)
    names = _names(program)
    l4: list[str] = []
    l3: list[str] = []
    for name in sorted(names):
        kind = restricted_kind(name)
        if kind is not None and kind not in l4:
            l4.append(kind)
    if any(_COMMAND_FLAGS.match(a) for a in (*entry_args, *req.agent_args)):
        l4.append("argument_runs_command")
    if any(DISPLAY_FLAGS.match(a) for a in req.agent_args):
        l4.append("argument_picks_display")
    if names & TERMINALS:
        (l4 if req.agent_args else l3).append(
            "terminal_command" if req.agent_args else "terminal_emulator"
        )
    if req.agent_args:
        l3.append("agent_arguments")
    trusted = _system_entry(req.entry)
    in_bin = os.path.dirname(req.program) in STANDARD_BIN_DIRS
    if req.entry is None:
        l3.append("unlisted_executable" if in_bin else "outside_standard_bin")
    elif not trusted:
        if not in_bin:
            l3.append("outside_standard_bin")
        if req.resolved_via_entry and entry_args:
            l3.append("user_entry_arguments")
    if req.entry_terminal:
        l3.append("terminal_entry")
    base = "desktop_entry" if req.resolved_via_entry else "listed_gui_executable"
    if l4:
        return LaunchRating(RiskLevel.L4, (*l4, *l3))
    if l3:
        return LaunchRating(RiskLevel.L3, tuple(l3))
    return LaunchRating(RiskLevel.L2, (base,))


def launch_identities(req: LaunchRequest) -> set[str]:
    """Every name allowedApps may use for this launch, lower-cased, compared whole."""
    out = _names(req.program) | {req.program.lower()}
    if req.desktop_id:
        did = req.desktop_id.lower()
        out |= {did, did.removesuffix(".desktop")}
    out.add(req.app.strip().lower().removesuffix(".desktop"))
    return {n for n in out if n}


def _named(allowed: list[str], ids: set[str]) -> bool:
    return bool({a.strip().lower().removesuffix(".desktop") for a in allowed} & ids)


def _context(req: LaunchRequest, rating: LaunchRating, url: str | None = None) -> PolicyContext:
    host = None
    if url:
        try:
            host = urlsplit(url).hostname
        except ValueError:
            host = None
    return PolicyContext(
        kind=LAUNCH_KIND,
        effect=_EFFECT[rating.risk],
        target_kind=TargetKind.WINDOW,
        data_classes=frozenset(),
        text_write=False,
        sensitive_target=False,
        app=AppIdentity(executable=req.executable, desktop_id=req.desktop_id),
        url=url,
        host=host,
        is_browser=url is not None,
        signals=rating.signals,
        target_label=req.executable,
    )


def evaluate_launch(
    req: LaunchRequest, contract: TaskContract, settings: SettingsModel
) -> PolicyDecision:
    """The launch's decision; the same contract fields and order as ``evaluate``."""
    rating = rate_launch(req)
    risk = rating.risk
    ctx = _context(req, rating)
    base = {"rating": rating.rating, "program": req.executable}

    def out(
        decision: Decision, reason: str, details: dict[str, str] | None = None
    ) -> PolicyDecision:
        return decided(risk, decision, reason, ctx, {**base, **(details or {})})

    entry = forbidden_entry(
        contract.forbidden_actions,
        (LAUNCH_KIND, ctx.effect.value, f"target:{ctx.target_kind.value}"),
    )
    if entry is not None:
        return out(Decision.DENY, Reason.FORBIDDEN_ACTION, {"entry": entry})
    ids = launch_identities(req)
    for source, allowed in (
        ("contract", contract.allowed_apps),
        ("settings", settings.allowed_apps),
    ):
        if allowed and not _named(allowed, ids):
            return out(
                Decision.DENY, Reason.APP_NOT_ALLOWED, {"app": req.executable, "source": source}
            )
    if contract.allowed_domains:
        for arg in req.agent_args:
            if "://" not in arg:
                continue
            denied = domain_reason(_context(req, rating, arg), contract.allowed_domains)
            if denied is not None:
                host = urlsplit(arg).hostname or ""
                return out(Decision.DENY, denied, {"host": host})
    explicit = _named(contract.allowed_apps, ids) or _named(settings.allowed_apps, ids)
    if risk >= RiskLevel.L4 and not explicit:
        return out(Decision.DENY, LaunchReason.LAUNCH_RESTRICTED)
    if risk >= RiskLevel.L3:
        return out(Decision.REQUIRE_APPROVAL, LaunchReason.LAUNCH_CONFIRMATION_REQUIRED)
    if contract.user_presence == UserPresence.SUPERVISED:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_SUPERVISED)
    if contract.user_presence == UserPresence.REQUIRED:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_REQUIRED)
    threshold = confirmation_threshold(settings.require_confirmation_above)
    if threshold is not None and risk > threshold:
        return out(Decision.REQUIRE_APPROVAL, Reason.CONFIRMATION_REQUIRED)
    return out(Decision.ALLOW, Reason.WITHIN_TASK_SCOPE)
