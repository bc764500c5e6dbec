"""Who may start the host. Replaced by full parent verification in the host-client work.

Until then only the development override is honoured; without it the host refuses to run
(exit 77), so nothing can drive the desktop through an unauthenticated host by accident.
"""

from __future__ import annotations

import os
import sys

EXIT_AUTH_FAILURE = 77


def authorize_parent() -> None:
    if os.environ.get("DESKPILOT_HOST_LOCAL_TRUST") == "1":
        return
    sys.stderr.write("deskpilot host: parent not verified (set by the host client only)\n")
    raise SystemExit(EXIT_AUTH_FAILURE)
