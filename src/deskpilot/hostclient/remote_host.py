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

This lives in hostclient because the check it runs is the client's; it never imports the host.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from deskpilot.hostclient.artifact import verify_host_artifact
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, default_host_argv
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.frames import FrameReader, FrameWriter, StreamClosed

EXIT_UNTRUSTED = 77
MODULE = "deskpilot.hostclient.remote_host"


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


def run() -> int:
    try:
        report = verify_host_artifact(os.environ)
    except DeskpilotError as exc:
        return _refuse(exc)
    env = dict(os.environ)
    env.pop(LOCAL_TRUST_ENV, None)
    if report.local_trust:
        env[LOCAL_TRUST_ENV] = "1"
    sys.stderr.write(
        f"deskpilot-host: {report.mode} install {report.version} "
        f"({report.files_checked} host files checked)\n"
    )
    sys.stderr.flush()
    child = subprocess.Popen(default_host_argv(), env=env, close_fds=True)
    # ssh ending the session sends SIGHUP/SIGTERM here: pass it on, then report its status
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, lambda s, f: child.send_signal(s))
    return child.wait()


def main() -> None:
    """The console script: re-run as ``python -I -m`` so the host's parent check (which
    accepts ``-m deskpilot.*``) passes and nothing on PYTHONPATH can shadow the modules."""
    if sys.argv[1:2] != ["--exec"]:
        os.execv(sys.executable, [sys.executable, "-I", "-m", MODULE, "--exec"])
    raise SystemExit(run())


if __name__ == "__main__":
    raise SystemExit(run())
