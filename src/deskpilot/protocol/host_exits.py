"""How the host process says why it ended on its own: its exit status.

The host speaks frames on stdout, but it can end before the first one (a parent it cannot
verify, a setting it cannot use) or after a stream it cannot read. Both sides need the same
numbers — the host to exit with them, the host client to say what they mean
(``hostclient/failures.py``) — and they cannot import each other, so the numbers live here.
"""

from __future__ import annotations

from typing import Final

#: the frame stream broke (a malformed frame, an unpaired binary frame)
EXIT_PROTOCOL_FAILURE: Final = 76
#: the host could not verify the process that started it (``host/trust.py``)
EXIT_AUTH_FAILURE: Final = 77
#: a ``DESKPILOT_*`` setting in the host's environment cannot be used (``host/settings.py``);
#: sysexits' EX_CONFIG. Each reason is one stderr line starting with ``SETTING_LINE``.
EXIT_CONFIG: Final = 78
#: the prefix of the host's stderr lines that name a setting it refused (read back by the
#: host client from the host log to put the reason in the error)
SETTING_LINE: Final = "deskpilot-host: refused setting: "
