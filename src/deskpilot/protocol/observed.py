"""An observation as it travels up from the host client: the window's state plus its pixels.

It is a value, handed back by the call that produced it (an ``observe``, or an action that
carried its post-action observation); no layer keeps a side cache of it for another to read.
"""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.protocol.wire import Observation, WindowInfo


@dataclass(frozen=True, slots=True)
class ObservedState:
    """An observation with its screenshot (PNG bytes, or None when not requested)."""

    observation: Observation
    png: bytes | None
    #: the desktop's top-level windows when this state was taken, when the host carried them
    #: (an action's post-action state does): an action that opened a dialog or a new window
    #: is told so without a second listing
    windows: tuple[WindowInfo, ...] | None = None
