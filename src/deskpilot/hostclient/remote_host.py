"""``deskpilot-host`` (``python -I -m deskpilot.hostclient.remote_host``): the host's entry
on a remote machine, started by ssh for a client elsewhere (hostclient/remote.py).

The client cannot check a remote install, so the remote checks itself before anything runs:
the same RECORD check the local client does before a spawn (``verify_host_artifact``: every
host module present, unmodified, not writable by others; an editable install only with
``DESKPILOT_HOST_LOCAL_TRUST=1``). When it fails, nothing is started: the first frame the
client sends (its handshake) is answered with a typed ``native_host_untrusted`` error carrying
the reason, and the process exits 77. When it passes, it starts ``python -I -m deskpilot.host``
as its child on the same stdin/stdout (no copying: the frames go straight through ssh), so the
host's own parent check (host/trust.py) sees this deskpilot process, and it exits with the
host's status. The host reports its version in the capabilities, as it does locally.

Two more modes, named by a word the eval appends to the remote command (plain words: the
remote shell reads them as they are):

* ``--eval-task``: a task's private desktop for ``deskpilot eval --host-command``. The check
  covers every module of the package (the setup's launch policy, the verification engine and
  the private desktop run here too, not only the host), then ``python -I -m
  deskpilot.eval.remote_task`` runs on the channel (eval/remote_task.py);
* ``--desktop=:N``: the host attached to that private desktop of this machine (the one a
  task's channel brought up): its ``DISPLAY`` and buses are the desktop's own, from the state
  file ``deskpilot desktop up`` writes — only a private desktop deskpilot started and that
  still runs is accepted (desktop/virtual.py), never the person's display.

This lives in hostclient because the check it runs is the client's; it never imports the host
or the eval (it starts them as programs).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence

from deskpilot.desktop.virtual import DesktopError, is_private_display
from deskpilot.desktop.virtual import load as load_desktop
from deskpilot.hostclient.artifact import HOST_TREES, PACKAGE_TREES, verify_host_artifact
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, default_host_argv
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.frames import FrameReader, FrameWriter, StreamClosed

EXIT_UNTRUSTED = 77
MODULE = "deskpilot.hostclient.remote_host"
#: the remote side of ``deskpilot eval --host-command`` (run as a program, never imported)
EVAL_TASK_MODULE = "deskpilot.eval.remote_task"
EVAL_TASK_WORD = "--eval-task"
_DESKTOP_WORD = re.compile(r"--desktop=(:\d{1,5})")


def _refuse(exc: DeskpilotError) -> int:
    """Answer the handshake with the typed refusal, so the client can say why."""
    sys.stderr.write(f"deskpilot-host: refused to start: {exc.message}\n")
    request_id: object = None
    try:
        request = FrameReader(sys.stdin.buffer).read().json()
        request_id = request.get("id") if isinstance(request, dict) else None
    except (StreamClosed, Exception):  # no readable handshake: the error goes out without id
        request_id = None
    details = dict(exc.details or {})
    details["remote"] = True
    response = {
        "type": "error",
        "id": request_id,
        "code": exc.code.value,
        "message": "the remote host refused to start: " + exc.message,
        "retryable": False,
        "details": details,
    }
    try:
        FrameWriter(sys.stdout.buffer).write_json(response)
        sys.stdout.buffer.flush()
    except OSError:
        pass
    return EXIT_UNTRUSTED


def _mode(args: Sequence[str]) -> tuple[str, str | None]:
    """("host" | "eval-task" | "attach", the display to attach to); raises on anything else."""
    if not args:
        return "host", None
    if list(args) == [EVAL_TASK_WORD]:
        return "eval-task", None
    if len(args) == 1 and (m := _DESKTOP_WORD.fullmatch(args[0])) is not None:
        return "attach", m.group(1)
    raise DeskpilotError(
        ErrorCode.INVALID_REQUEST,
        f"deskpilot-host takes no argument, {EVAL_TASK_WORD} or --desktop=:N, not "
        f"{' '.join(args)!r}",
        retryable=False,
        details={"reason": "host_command"},
    )


def _attached_env(env: dict[str, str], display: str) -> dict[str, str]:
    """``env`` on the private desktop ``display``: its DISPLAY and buses, from its state file
    (a display that is not a running private desktop is refused: never the person's)."""
    try:
        state = load_desktop(display) if is_private_display(display) else None
    except DesktopError:
        state = None
    if state is None:
        raise DeskpilotError(
            ErrorCode.ENVIRONMENT_UNAVAILABLE,
            f"{display} is not a private desktop deskpilot started on this machine (or it "
            "has ended): a host attaches only to one",
            retryable=False,
            details={"reason": "no_private_desktop", "display": display},
        )
    for key in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "XAUTHORITY"):
        env.pop(key, None)
    return {**env, **state.env}


def run(args: Sequence[str] = ()) -> int:
    try:
        mode, display = _mode(args)
        trees = PACKAGE_TREES if mode == "eval-task" else HOST_TREES
        report = verify_host_artifact(os.environ, trees)
        env = dict(os.environ)
        env.pop(LOCAL_TRUST_ENV, None)
        if report.local_trust:
            env[LOCAL_TRUST_ENV] = "1"
        if display is not None:
            env = _attached_env(env, display)
    except DeskpilotError as exc:
        return _refuse(exc)
    sys.stderr.write(
        f"deskpilot-host: {report.mode} install {report.version} "
        f"({report.files_checked} files checked)"
        + (f", attached to {display}" if display else "")
        + (", an eval task's desktop" if mode == "eval-task" else "")
        + "\n"
    )
    sys.stderr.flush()
    if mode == "eval-task":
        argv = [sys.executable, "-I", "-m", EVAL_TASK_MODULE]
    else:
        argv = default_host_argv()
    child = subprocess.Popen(argv, env=env, close_fds=True)
    # ssh ending the session sends SIGHUP/SIGTERM here: pass it on, then report its status
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, lambda s, f: child.send_signal(s))
    return child.wait()


def main() -> None:
    """The console script: re-run as ``python -I -m`` so the host's parent check (which
    accepts ``-m deskpilot.*``) passes and nothing on PYTHONPATH can shadow the modules."""
    if sys.argv[1:2] != ["--exec"]:
        os.execv(sys.executable, [sys.executable, "-I", "-m", MODULE, "--exec", *sys.argv[1:]])
    raise SystemExit(run(sys.argv[2:]))


if __name__ == "__main__":
    given = sys.argv[1:]
    raise SystemExit(run(given[1:] if given[:1] == ["--exec"] else given))
