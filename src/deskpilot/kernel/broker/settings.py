"""The broker's view of the settings: read on every action (``enabled``, the policy's inputs,
the confirmation timeout), so it is cached, and kept current two ways — this process's own
writes arrive through the settings listener at once, another process's (``deskpilot settings
set``, the UI) within :data:`SETTINGS_RECHECK_SECONDS` through the table's revision
(docs/kernel.md, "Settings")."""

from __future__ import annotations

import time

from deskpilot.store.db import Database
from deskpilot.store.settings import Settings, SettingsModel

SETTINGS_RECHECK_SECONDS = 1.0


class SettingsCache:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._settings = Settings.load(db)
        self._rev = Settings.revision(db)
        self._checked = time.monotonic()
        self._unsubscribe = Settings.subscribe(self._on_settings)

    def _on_settings(self, db: Database, old: SettingsModel, new: SettingsModel) -> None:
        if db.path == self.db.path:
            self._settings = new

    def get(self) -> SettingsModel:
        """Current settings; rows written by another process are picked up within 1 s."""
        now = time.monotonic()
        if now - self._checked >= SETTINGS_RECHECK_SECONDS:
            self._checked = now
            rev = Settings.revision(self.db)
            if rev != self._rev:
                self._rev = rev
                self._settings = Settings.load(self.db)
        return self._settings

    def close(self) -> None:
        self._unsubscribe()
