"""The rules for a host on another machine, reached over SSH (``--host-command``).

A local host is trusted because the client checks its install (``artifact``) and the host
checks its parent (``host/trust.py``). Neither check can cross a network, so a remote host is
trusted differently (docs/host.md, "A host on another machine"):

- the command is an argv (split like a shell would, run without one) whose program is
  ``ssh``: shell operators, ``sh -c`` and any other program are refused, because the pinning
  below is the trust anchor and only ssh gives it. ssh's own flags are an allow-list
  (:data:`SSH_FLAGS`, ``-o`` only with :data:`SSH_OPTION_KEYS`): a single-letter flag
  overrides an earlier ``-o`` (``-A``, ``-X``, ``-S`` would undo the options below) and
  ``ProxyCommand``/``LocalCommand`` run local shell lines. The remote command's tokens are
  plain words (:data:`_REMOTE_WORD`): the remote sshd hands them to the user's shell, so a
  ``;`` inside one token would still run a second command there;
- the remote machine is identified by its SSH host key, pinned in a known_hosts file that
  deskpilot keeps (``data_dir()/ssh/known_hosts``). Our options go first on ssh's command
  line (ssh takes the first value of an option, and the command line before ~/.ssh/config):
  ``StrictHostKeyChecking=yes`` against that file only, no agent or X forwarding, no escape
  character (the channel carries binary frames), no shared master connection that would skip
  the check. A host key that is not pinned yet is refused with a sentence saying how to pin
  it (``--pin-host-key`` once: ``accept-new``, trust on first use; a changed key is still
  refused then);
- the remote runs ``deskpilot-host`` (``python -I -m deskpilot.hostclient.remote_host``),
  which verifies its own install against RECORD before it starts the host, and answers the
  handshake with a typed ``native_host_untrusted`` and its reason when it cannot. The host's
  version comes back in the capabilities.

ssh's own failures end it with status 255; what it wrote to stderr (the host log) says which:
a changed or unknown host key, an authentication failure, an unreachable machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.paths import data_dir

SSH_FAILURE_EXIT = 255
#: how ``deskpilot eval --host-command`` reaches the ``deskpilot serve`` each task starts
HOST_COMMAND_ENV = "DESKPILOT_HOST_COMMAND"
#: the known_hosts file a process checks remote keys against, when not its data dir's
KNOWN_HOSTS_ENV = "DESKPILOT_SSH_KNOWN_HOSTS"
#: tokens a shell would treat as operators: meaningless (and a sign of a mistake) in an argv
SHELL_OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", ">", ">>", "<", "<<", "(", ")"})
_SHELL_CHARS = ("`", "$(", "\n")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "env"})
#: ssh flags a --host-command may give, and whether each takes a value; any other flag is
#: refused (-A -X -Y forward the agent or the display, -S/-M share a master connection that
#: skips the host-key check, -F/-J/-W/-L/-R/-D/-e/-t change where or how it connects)
SSH_FLAGS = {"p": True, "i": True, "l": True, "o": True, "4": False, "6": False, "q": False}
#: the ``-o`` keys allowed (lower case, as ssh compares them): where and as whom to log in,
#: which key, how long to wait, the remote's variables given by value (``SetEnv``, for the
#: remote desktop's DISPLAY; ``SendEnv`` would send this machine's by name); none runs a
#: command, forwards, or touches the host-key check
SSH_OPTION_KEYS = frozenset(
    {
        "port",
        "user",
        "identityfile",
        "identitiesonly",
        "connecttimeout",
        "connectionattempts",
        "serveraliveinterval",
        "serveralivecountmax",
        "addressfamily",
        "compression",
        "loglevel",
        "setenv",
    }
)
#: a remote-command token the remote shell reads as one plain word (no operator, quote,
#: expansion or glob; ``~`` only expands to the remote home)
_REMOTE_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./~-]+")
#: variables ssh never needs: with forwarding off they only name this machine's display
SSH_DROPPED_ENV = ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY")


def known_hosts_path() -> Path:
    """deskpilot's own known_hosts: the only file ssh consults for a remote host's key.

    :data:`KNOWN_HOSTS_ENV` names it for a process whose data dir is not the person's: a
    ``deskpilot serve`` that ``deskpilot eval`` starts for a task runs with the task's own
    data dir, and must still check the keys the person pinned."""
    given = os.environ.get(KNOWN_HOSTS_ENV)
    if given:
        return Path(given)
    d = data_dir() / "ssh"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d / "known_hosts"


def bad_command(message: str) -> DeskpilotError:
    return DeskpilotError(
        ErrorCode.INVALID_REQUEST, message, retryable=False, details={"reason": "host_command"}
    )


def parse_host_command(text: str | Sequence[str]) -> tuple[str, ...]:
    """Split and check a ``--host-command``; raises invalid_request (``details.reason``
    ``host_command``) with the rule broken."""
    if isinstance(text, str):
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise bad_command(f"--host-command cannot be split into an argv: {exc}") from None
    else:
        argv = list(text)
    if not argv:
        raise bad_command('--host-command is empty; e.g. "ssh user@machine deskpilot-host"')
    program = Path(argv[0]).name
    if program in _SHELLS:
        raise bad_command(
            f"--host-command runs without a shell: {program!r} is refused; give ssh's argv, "
            'e.g. "ssh user@machine deskpilot-host"'
        )
    if program != "ssh":
        raise bad_command(
            f"--host-command must run ssh (the remote's pinned host key is the trust check), "
            f"not {program!r}"
        )
    for token in argv[1:]:
        if token in SHELL_OPERATORS or any(c in token for c in _SHELL_CHARS):
            raise bad_command(
                f"--host-command is an argv, not a shell line: {token!r} is a shell operator"
            )
    remote = _check_ssh_options(argv[1:])
    if len(remote) < 2:
        raise bad_command(
            "--host-command needs a destination and the remote command, e.g. "
            '"ssh user@machine deskpilot-host"'
        )
    for token in remote[1:]:  # the destination is ssh's, read here, not by a shell
        if not _REMOTE_WORD.fullmatch(token):
            raise bad_command(
                f"--host-command: {token!r} has a character the remote shell would read "
                "(the remote command runs in the remote user's shell): give plain words"
            )
    return tuple(argv)


def _check_ssh_options(args: Sequence[str]) -> list[str]:
    """Check ssh's flags the way ssh reads them (flags, the destination, flags again, then
    the remote command) and return the destination and the command."""
    rest: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if len(rest) >= 2 or not token.startswith("-") or token == "-":
            rest.append(token)
            continue
        if token == "--":
            rest.extend(args[i:])
            break
        for j, flag in enumerate(token[1:], start=1):
            takes_value = SSH_FLAGS.get(flag)
            if takes_value is None:
                raise bad_command(
                    f"--host-command: ssh's -{flag} is refused (allowed: -p -i -l -4 -6 -q "
                    "and -o with " + ", ".join(sorted(SSH_OPTION_KEYS)) + ")"
                )
            if not takes_value:
                continue
            value = token[j + 1 :]
            if not value:
                if i >= len(args):
                    raise bad_command(f"--host-command: ssh's -{flag} needs a value")
                value = args[i]
                i += 1
            if flag == "o":
                key = re.split(r"[=\s]", value.strip(), maxsplit=1)[0].lower()
                if key not in SSH_OPTION_KEYS:
                    raise bad_command(
                        f"--host-command: ssh option {key or value!r} is refused (deskpilot "
                        "sets the host-key, forwarding and connection options itself; "
                        "allowed: " + ", ".join(sorted(SSH_OPTION_KEYS)) + ")"
                    )
            break
    return rest


def ssh_environment(base: Mapping[str, str]) -> dict[str, str]:
    """ssh's own environment: ``base`` without this machine's display. X forwarding is off,
    so ssh has no use for it, and a remote must never learn or reach it. ``SSH_AUTH_SOCK``
    stays: it is how ssh authenticates with a key held in an agent, and the agent is not
    forwarded (``ForwardAgent=no`` first, ``-A`` refused)."""
    return {k: v for k, v in base.items() if k not in SSH_DROPPED_ENV}


def is_remote_command(argv: Sequence[str]) -> bool:
    """An ssh argv (a ``--host-command``) rather than a local host program (tests' seam)."""
    return bool(argv) and Path(argv[0]).name == "ssh"


def ssh_argv(
    command: Sequence[str], *, known_hosts: Path | None = None, pin: bool = False
) -> tuple[str, ...]:
    """The argv actually spawned: our options first, so neither later ``-o`` nor
    ~/.ssh/config can relax them."""
    path = known_hosts if known_hosts is not None else known_hosts_path()
    options = {
        "BatchMode": "yes",  # no password prompt on a channel that carries frames
        "StrictHostKeyChecking": "accept-new" if pin else "yes",
        "UserKnownHostsFile": str(path),
        "GlobalKnownHostsFile": "/dev/null",
        "UpdateHostKeys": "no",
        "HashKnownHosts": "no",  # deskpilot's file stays readable: which machine, which key
        "ControlMaster": "no",
        "ControlPath": "none",
        "ForwardAgent": "no",
        "ForwardX11": "no",
        "ClearAllForwardings": "yes",
        "RequestTTY": "no",
    }
    argv = [command[0], "-T", "-e", "none"]
    for key, value in options.items():
        argv += ["-o", f"{key}={value}"]
    return (*argv, *command[1:])


def log_offset(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def read_log_since(path: Path, offset: int, limit: int = 16384) -> str:
    with contextlib.suppress(OSError), path.open("rb") as f:
        f.seek(offset)
        return f.read(limit).decode("utf-8", "replace")
    return ""


def ssh_failure(stderr: str, known_hosts: Path | None = None) -> DeskpilotError:
    """ssh ended with 255: name the reason from what it said (no secrets in its stderr)."""
    path = known_hosts or known_hosts_path()
    text = stderr.lower()
    said = " ".join(line.strip() for line in stderr.splitlines() if line.strip())[-400:]
    # (what ssh said, the error's code, its reason, the sentence), the first match wins
    known: tuple[tuple[bool, ErrorCode, str, str], ...] = (
        (
            "remote host identification has changed" in text
            or ("host key for" in text and "has changed" in text),
            ErrorCode.NATIVE_HOST_UNTRUSTED,
            "host_key_mismatch",
            "the remote machine's SSH host key does not match the pinned one: refusing to "
            f"connect (if the machine was reinstalled, remove its line from {path} and pin "
            "again)",
        ),
        (
            "host key verification failed" in text or "host key is known" in text,
            ErrorCode.NATIVE_HOST_UNTRUSTED,
            "host_key_unknown",
            "the remote machine's SSH host key is not pinned: pin it once with --pin-host-key "
            f"(trust on first use), or add the machine's key to {path} (ssh-keyscan)",
        ),
        (
            "permission denied" in text or "too many authentication failures" in text,
            ErrorCode.NATIVE_HOST_UNAVAILABLE,
            "ssh_auth_failed",
            "ssh could not log in to the remote machine (authentication failed; deskpilot "
            "runs ssh in batch mode, so use a key or an agent, not a password)",
        ),
    )
    code, reason, message = next(
        ((c, r, m) for hit, c, r, m in known if hit),
        (
            ErrorCode.NATIVE_HOST_UNAVAILABLE,
            "ssh_failed",
            f"ssh failed to reach the remote host (exit 255): {said or 'no message'}",
        ),
    )
    return DeskpilotError(code, message, retryable=False, details={"reason": reason, "ssh": said})


def remote_location(command: Sequence[str]) -> str:
    """For reports: the command without its options' values would still say where; the
    whole argv is not secret (keys are paths)."""
    return "ssh:" + shlex.join(command[1:])
