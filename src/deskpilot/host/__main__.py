"""``python -m deskpilot.host``: the native host process (spawned by the host client only).

The parent is verified before anything is read, then the ``DESKPILOT_*`` settings (a value
the host cannot use ends it with ``EXIT_CONFIG``, saying why: host/settings.py). Then stdout
is reserved for frames: the real stdout descriptor is duplicated for the frame writer and
descriptor 1 is pointed at stderr, so a stray ``print`` or a C library writing to fd 1 can
never corrupt the frame stream. Logs go to stderr and never contain typed text or images.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from types import FrameType

F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe lets a typical observation (tree + PNG) leave in one write instead of
    a ping-pong of 64 KiB chunks with the client; a failure just keeps the default size."""
    import contextlib
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)


def main() -> None:
    from deskpilot.host.trust import authorize_parent

    authorize_parent()

    from deskpilot.host import settings
    from deskpilot.protocol.host_exits import EXIT_CONFIG, SETTING_LINE

    # a setting the host cannot use ends it before it serves anything: each one said on a
    # line the host client reads back into its error (host/settings.py)
    bad = settings.problems()
    if bad:
        sys.stderr.write("".join(f"{SETTING_LINE}{line}\n" for line in bad))
        sys.stderr.flush()
        raise SystemExit(EXIT_CONFIG)

    frames_fd = os.dup(1)
    _widen_pipe(frames_fd)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.log_level(),
        format="deskpilot-host %(levelname)s %(name)s: %(message)s",
    )
    for notice in settings.notices():
        logging.getLogger("deskpilot.host").warning("%s", notice)

    from deskpilot.host.handler import RequestHandler
    from deskpilot.host.server import EXIT_OK, Output, Server
    from deskpilot.host.x11.desktop import X11Desktop

    desktop = X11Desktop()
    handler = RequestHandler(desktop)
    output = Output(os.fdopen(frames_fd, "wb", buffering=1 << 16))
    server = Server(handler, sys.stdin.buffer, output)

    def on_term(signum: int, frame: FrameType | None) -> None:
        server.shutdown(EXIT_OK)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    server.run(ready=handler.start)


if __name__ == "__main__":
    main()
