"""Where deskpilot keeps its state.

Everything (database, vault, settings, logs) lives under one directory: ``$DESKPILOT_DATA_DIR``
when set, else ``$XDG_DATA_HOME/deskpilot`` (``~/.local/share/deskpilot``). One root makes a
test or a second installation fully isolated by one variable.
"""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    override = os.environ.get("DESKPILOT_DATA_DIR")
    if override:
        root = Path(override).expanduser()
    else:
        xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        root = Path(xdg) / "deskpilot"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def database_path() -> Path:
    return data_dir() / "deskpilot.sqlite3"


def logs_dir() -> Path:
    d = data_dir() / "logs"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def vault_dir() -> Path:
    return data_dir() / "snapshot-vault"
