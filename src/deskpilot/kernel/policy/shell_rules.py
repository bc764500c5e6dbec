"""Rate and decide a shell command (the agent's ``bash`` tool) before anything runs.

A command runs as the server's user with ``/bin/sh -c`` in a working directory, so it is an
action like any other: it gets a risk level from what the command text says it will do, with
the signal that set it as the rating's reason code (docs/policy.md, "Shell commands"):

* L1 ``reversible_local`` — ``read_only_command``: every simple command is a known inspector
  (ls, cat, grep, find without -exec/-delete, wc, head, echo, git status/log/diff …) whose
  paths stay inside the working directory.
* L2 ``external_write`` — ``writes_in_cwd``: something is written, moved or deleted (a
  redirection, tee, cp, mv, mkdir, touch, rm without -r, sed -i, chmod, git add/commit …) and
  every target resolves inside the working directory; ``reads_outside_cwd``: an inspector reads
  a path outside it (or one that cannot be resolved, ``$VAR/x``, or ``cd`` leaves it).
* L3 ``high_impact`` (a confirmation from the person) — ``recursive_delete`` (rm -r/-rf/-fr/
  --recursive, find -delete), ``privilege_tool`` (sudo, su, pkexec, doas …: launch_rules'
  ``PRIVILEGE_TOOLS``), ``destructive_tool`` (dd, mkfs*, shred, wipefs, fdisk …),
  ``recursive_permission_change`` (chmod/chown/chgrp -R), ``process_signal`` (kill, pkill,
  killall …), ``system_control`` (shutdown, systemctl, mount, date -s …), ``git_destructive``
  (push --force, reset --hard, clean, branch -D, stash drop/clear, checkout -f …),
  ``write_outside_cwd`` (a write target that resolves outside the working directory after
  ``~``, ``..``, absolute paths, symlinks and globs; ``/dev/null`` and the standard streams
  are fine), ``sensitive_path`` (credentials, shell start-up files, deskpilot's own data dir,
  ``.git/hooks`` / ``.git/config``), ``network_tool`` (curl, wget, nc, ssh, scp, rsync to a
  host, dig, ping, git clone/fetch/pull/push …), ``package_manager`` (pip/npm install, apt …),
  ``desktop_input`` (xdotool, wmctrl, xclip …: input and clipboard outside the kernel's
  action policy), ``detaches_process`` (setsid, at, crontab: work that outlives the action),
  ``environment_override`` (PATH=, LD_PRELOAD=, GIT_* … before a command), and fail-closed
  signals for what cannot be analysed: ``command_substitution`` (``$(…)``, backticks,
  ``<(…)``), ``shell_evaluation`` (eval, exec, source, ``.``, trap), ``nested_shell`` (sh -c,
  bash, busybox …), ``interpreter`` (python, perl, node, awk … — code or a script),
  ``heredoc``, ``runs_hidden_command`` (sed's e/w/r commands, git -c / git config writes),
  ``unknown_program`` (a program this table does not know, one given by a path outside the
  standard bin dirs, or a command name from a variable) and ``unparsed`` (an unclosed quote,
  subshells, ``if``/``for``/``while``/``case``/functions).

The command is split the way the shell splits it — on ``;``, ``&&``, ``||``, ``|``, ``&`` and
newlines, into simple commands with their redirections — by ``shlex`` (posix, with
punctuation characters). shlex forgets which characters were quoted, so a short pre-pass
(``shell_parse.mask_quotes``) replaces quoted or escaped special characters by private-use
stand-ins first: ``echo ";"`` stays one command, a quoted ``*`` is no glob and a quoted
``$`` no expansion.
Every simple command is checked, also after ``env``/``nohup``/``timeout``/``nice``/``xargs``/
``command`` prefixes and inside ``find -exec``. ``cd`` moves the directory later relative paths
resolve against. The rating lists the highest level's signals first (the first is the one
that set the level), then the others.

This module is the policy's public face (the request, its validation, the rating and the
decision); the work is in its siblings: ``shell_tables`` (what each program and path means),
``shell_parse`` (quoting, tokens, simple commands, options), ``shell_scan`` (the signals found
and the paths named), ``shell_commands`` (one simple command, its wrappers and dispatch) and
``shell_programs`` (the raters of individual programs' arguments).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field

from deskpilot.kernel.policy.context import PolicyContext
from deskpilot.kernel.policy.contract import forbidden_entry
from deskpilot.kernel.policy.engine import (
    PolicyDecision,
    Reason,
    confirmation_threshold,
    decided,
)
from deskpilot.kernel.policy.shell_commands import rate_simple
from deskpilot.kernel.policy.shell_parse import Unparsed, mask_quotes, split_commands, tokenize
from deskpilot.kernel.policy.shell_scan import Scan, sensitive_roots
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
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

__all__ = [
    "FORBIDDEN_NAMES",
    "MAX_COMMAND_CHARS",
    "MAX_TIMEOUT_S",
    "SHELL_KIND",
    "ShellRating",
    "ShellReason",
    "ShellRequest",
    "evaluate_shell",
    "rate_shell",
    "sensitive_roots",
    "validate_shell",
]

SHELL_KIND = "bash"
#: names a contract's forbiddenActions may use for every command
FORBIDDEN_NAMES = (SHELL_KIND, "shell")
MAX_COMMAND_CHARS = 16_000
MAX_TIMEOUT_S = 3_600.0


class ShellReason(enum.StrEnum):
    SHELL_CONFIRMATION_REQUIRED = "shell_confirmation_required"


@dataclass(frozen=True, slots=True)
class ShellRequest:
    """A command the agent asked for; nothing of it has run yet."""

    command: str
    #: absolute path of the working directory (the scope "inside" is measured against)
    cwd: str
    timeout_s: float


@dataclass(frozen=True, slots=True)
class ShellRating:
    risk: RiskLevel
    #: the signal that set the level first, then the others
    signals: tuple[str, ...] = field(default_factory=tuple)

    @property
    def rating(self) -> str:
        return self.signals[0] if self.signals else "read_only_command"


def validate_shell(req: ShellRequest) -> None:
    """A request the kernel can govern at all; otherwise ``invalid_request``."""
    problem = None
    if not req.command.strip():
        problem = "the command is empty"
    elif len(req.command) > MAX_COMMAND_CHARS:
        problem = f"the command is longer than {MAX_COMMAND_CHARS} characters"
    elif "\x00" in req.command:
        problem = "the command contains a NUL byte"
    elif not os.path.isabs(req.cwd) or not os.path.isdir(req.cwd):
        problem = "cwd must be the absolute path of an existing directory"
    elif not 0 < req.timeout_s <= MAX_TIMEOUT_S:
        problem = f"timeout_s must be above 0 and at most {MAX_TIMEOUT_S:g}"
    if problem is not None:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, problem)


_EFFECT = {
    RiskLevel.L1: EffectClass.REVERSIBLE_LOCAL,
    RiskLevel.L2: EffectClass.EXTERNAL_WRITE,
    RiskLevel.L3: EffectClass.HIGH_IMPACT,
}


def rate_shell(req: ShellRequest) -> ShellRating:
    root = os.path.realpath(req.cwd)
    scan = Scan(root=root, base=root, sensitive=sensitive_roots())
    try:
        masked, subst = mask_quotes(req.command)
        if subst:
            scan.add(RiskLevel.L3, "command_substitution")
        for simple in split_commands(tokenize(masked)):
            rate_simple(simple, scan)
    except Unparsed:
        scan.add(RiskLevel.L3, "unparsed")
    if not scan.found:
        return ShellRating(RiskLevel.L1, ("read_only_command",))
    levels = sorted(scan.found, reverse=True)
    signals = tuple(code for level in levels for code in scan.found[level])
    return ShellRating(levels[0], signals)


def _context(req: ShellRequest, rating: ShellRating) -> PolicyContext:
    return PolicyContext(
        kind=SHELL_KIND,
        effect=_EFFECT[rating.risk],
        target_kind=TargetKind.UNKNOWN,
        data_classes=frozenset(),
        text_write=False,
        sensitive_target=False,
        app=AppIdentity(executable="sh"),
        url=None,
        host=None,
        is_browser=False,
        signals=rating.signals,
        target_label=None,
    )


def evaluate_shell(
    req: ShellRequest, contract: TaskContract, settings: SettingsModel
) -> PolicyDecision:
    """The command's decision; the contract fields in ``evaluate_launch``'s order.

    ``forbiddenActions`` naming ``bash``, ``shell``, the rating's effect class or
    ``target:unknown`` (a command has no window target) denies it. ``allowedApps`` does not
    apply: it names the desktop apps a session may operate, and a command is not one of them
    (nor can naming ``sh`` there allow anything). ``allowedDomains`` is not checked either:
    every network command is L3, so the person sees its hosts before it runs. Then L3 →
    ``shell_confirmation_required``; ``userPresence`` (``supervised``: every command,
    ``required``: L2 and above) and ``requireConfirmationAbove`` as for every action."""
    rating = rate_shell(req)
    risk = rating.risk
    ctx = _context(req, rating)
    base = {"rating": rating.rating}

    def out(
        decision: Decision, reason: str, details: dict[str, str] | None = None
    ) -> PolicyDecision:
        return decided(risk, decision, reason, ctx, {**base, **(details or {})})

    entry = forbidden_entry(
        contract.forbidden_actions,
        (*FORBIDDEN_NAMES, ctx.effect.value, f"target:{ctx.target_kind.value}"),
    )
    if entry is not None:
        return out(Decision.DENY, Reason.FORBIDDEN_ACTION, {"entry": entry})
    if risk >= RiskLevel.L3:
        return out(Decision.REQUIRE_APPROVAL, ShellReason.SHELL_CONFIRMATION_REQUIRED)
    if contract.user_presence == UserPresence.SUPERVISED:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_SUPERVISED)
    if contract.user_presence == UserPresence.REQUIRED and risk >= RiskLevel.L2:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_REQUIRED)
    threshold = confirmation_threshold(settings.require_confirmation_above)
    if threshold is not None and risk > threshold:
        return out(Decision.REQUIRE_APPROVAL, Reason.CONFIRMATION_REQUIRED)
    return out(Decision.ALLOW, Reason.WITHIN_TASK_SCOPE)
