"""What sharing one desktop with other deskpilot processes looks like from here, for doctor.

Answers without starting a kernel: the kill switch a server started now would have (armed,
watching another deskpilot process's, or unavailable with the cause) and who holds this
display's desktop lease.
"""

from __future__ import annotations

import os
from typing import Any

from deskpilot.kernel.killswitch import probe
from deskpilot.kernel.lease import DisplayLease
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings


def desktop_sharing() -> dict[str, Any]:
    if not os.environ.get("DISPLAY"):
        return {"killSwitch": {"state": "unavailable", "cause": "no X display (DISPLAY unset)"}}
    try:
        chord = Settings.load(Database()).kill_switch
    except Exception as exc:  # a broken data dir is reported elsewhere; say why here too
        return {"killSwitch": {"state": "unknown", "cause": f"settings unreadable: {exc}"}}
    state: dict[str, Any] = (
        probe(chord).to_json()
        if chord
        else {"state": "off", "chord": "", "cause": "killSwitch is empty"}
    )
    if state.get("state") == "armed":  # the probe could grab it: nobody holds the chord
        state.update(state="free", armed=False, cause="a deskpilot server started now arms it")
    # a chord was asked for and a display is here, yet no server could arm or watch it: the
    # person would have no way to stop an agent, so the desktop is not ready
    state["blocksReady"] = state.get("state") == "unavailable"
    return {"killSwitch": state, "desktopLease": DisplayLease().status()}
