"""The environment a task's processes start from, wherever its desktop runs.

A task's apps, its server and its checks start from the environment of whoever runs the eval
(the person here, the ssh user on a remote machine) without what names that person's
session: their display and buses, their config and data homes, and the decision model's key
(only the operator's side gets one: worker.py ``with_provider``). The task's own private
desktop and directories are put in their place. Used by the local worker and by the remote
task process (remote_task.py) alike, so a setup is given the same environment on either side.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

#: what names a desktop session: an MCP agent command gets none of it (it reaches the
#: desktop through the server only), a task's processes get the task's own
DESKTOP_KEYS = (
    "DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "AT_SPI_BUS_ADDRESS",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
)
#: the person's session variables a task's processes never inherit (desktop, config homes)
PERSON_KEYS = (
    *DESKTOP_KEYS,
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "DESKPILOT_DATA_DIR",
)
PROVIDER_PREFIX = "DESKPILOT_PROVIDER_"
#: the decision model's key under its other name: only the operator gets a key, as
#: ``DESKPILOT_PROVIDER_API_KEY`` (provider_env.py)
PROVIDER_KEYS = ("DESKPILOT_API_KEY",)


def task_environment(
    base_env: Mapping[str, str], desktop_env: Mapping[str, str], root: Path
) -> dict[str, str]:
    """``base_env`` without the person's session and any model key, with the task's desktop
    (``desktop_env``: its DISPLAY and buses; empty when the desktop is on another machine)
    and the task's own data, config and cache dirs under ``root``."""
    env = {
        k: v
        for k, v in base_env.items()
        if k not in PERSON_KEYS and k not in PROVIDER_KEYS and not k.startswith(PROVIDER_PREFIX)
    }
    env.update(desktop_env)
    env.update(
        {
            "DESKPILOT_DATA_DIR": str(root / "data"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_CACHE_HOME": str(root / "cache"),
            # settings live in memory: an app must not write the person's dconf database
            "GSETTINGS_BACKEND": "memory",
        }
    )
    # with no XAUTHORITY, Xlib falls back to ~/.Xauthority: the cookies of the person's own
    # displays. A file that does not exist gives none; the private desktop needs none.
    env.setdefault("XAUTHORITY", str(root / "no-xauthority"))
    return env


def private_dir(path: Path) -> Path:
    """A directory only this user reads (0700), made if missing."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def task_dirs(root: Path) -> Path:
    """A task run's directory and its ``work``, ``data``, ``config``, ``cache`` (0700)."""
    private_dir(root)
    for sub in ("work", "data", "config", "cache"):
        private_dir(root / sub)
    return root
