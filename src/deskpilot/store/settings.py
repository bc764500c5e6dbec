"""Typed user settings, persisted one key per row in the ``settings`` table.

Every field here has a production reader (named in its comment); a setting that changes no
behaviour is not declared. :meth:`Settings.load` always answers a complete model: keys never
written fall back to their defaults, so a fresh install behaves exactly like the defaults say
(reading the raw row and, finding none, doing nothing would leave the kill switch unarmed).

Vault and kernel code read settings through this module::

    model = Settings.load(db)                     # SettingsModel, defaults filled in
    Settings.update(db, kill_switch="ctrl+alt+k")  # validated, persisted, listeners told
    unsubscribe = Settings.subscribe(listener)      # listener(db, old, new) in this process

Other processes (``deskpilot`` CLI, the dashboard) write the same rows; long-lived readers
that must notice those writes compare :meth:`Settings.revision` now and then.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from deskpilot.protocol.chords import normalise_chord
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.db import Database

#: "off", or the highest risk level that still runs without a one-time confirmation.
ConfirmationThreshold = Literal["off", "L0", "L1", "L2", "L3"]


class RemoteAccess(BaseModel):
    """What a dashboard browser on another machine may do (web: the dashboard's guard reads
    it on every request from a non-loopback peer; a browser on this machine may do all)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    #: watch: the live view, sessions, timelines, readiness
    observe: bool = False
    #: approve or deny confirmations of actions rated at most L2 (L3+ only from this machine)
    approve_l2: bool = Field(default=False, alias="approveL2")
    #: pause, take over, resume, stop and change window
    control: bool = False


class Environments(BaseModel):
    """Which desktops agents may act on (kernel.broker.admission: an action on a desktop
    whose kind is off answers ``computer_disabled`` with reason ``environment_disabled``;
    observing still works). The kind: desktop/virtual.py ``is_private_display``."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    #: the person's own display (any DISPLAY that is not a deskpilot private desktop)
    my_desktop: bool = True
    #: a private virtual desktop deskpilot started (``deskpilot desktop up``, tests, eval)
    private_desktop: bool = True


class SettingsModel(BaseModel):
    """An immutable snapshot of every setting. Wire/JSON names are camelCase."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    #: kernel.broker: when false every action answers ``computer_disabled``; observing works.
    enabled: bool = True
    #: kernel.killswitch: the global chord that cancels every session; "" disarms it.
    kill_switch: str = "ctrl+shift+Escape"
    #: kernel.killswitch: the person's physical Escape during an action cancels that action.
    escape_cancels_action: bool = True
    #: kernel.policy: actions rated strictly above this level wait for a one-time
    #: confirmation (``deskpilot confirm``); "L2" means L3 and L4 need one. "off" = never.
    require_confirmation_above: ConfirmationThreshold = "off"
    #: kernel.confirmation: how long a pending confirmation waits before it counts as denied.
    confirmation_timeout_seconds: int = Field(default=120, ge=5, le=3_600)
    #: kernel.policy: when non-empty, only these app identities may be acted on (in addition
    #: to any task contract's own allowedApps).
    allowed_apps: list[str] = Field(default_factory=list)
    #: runtime.state_view (the model's image) and vault.service (every stored image, read per
    #: capture): paint secure regions grey; off, images show what the screen shows.
    redact_sensitive_content: bool = True
    #: runtime.snapshots (before each action) and vault.service (per frame): keep an evidence
    #: frame before and after every action; off, none is captured or stored.
    full_recording_enabled: bool = False
    #: vault.retention (each maintenance run): app snapshots older than this many days are
    #: deleted (0: at the next run); evidence frames keep their fixed 24 h.
    evidence_retention_days: int = Field(default=30, ge=0, le=3_650)
    #: vault.retention (after every capture and each maintenance run): total encrypted bytes
    #: kept on disk before the least recently used snapshots are evicted (16 MiB .. 16 TiB:
    #: the upper bound keeps the byte count far inside SQLite's 64-bit integers).
    vault_quota_bytes: int = Field(default=1024**3, ge=16 * 1024**2, le=16 * 1024**4)
    #: kernel.broker.admission (every action): which kinds of desktop actions may run on
    environments: Environments = Field(default_factory=Environments)
    #: web: what a dashboard browser on another machine may do
    remote: RemoteAccess = Field(default_factory=RemoteAccess)
    #: runtime.verification: ``external_readback`` specs (a command the caller names, run
    #: without a shell) are accepted and run only when this is true; off, start_task refuses them.
    allow_external_readback: bool = False

    @field_validator("kill_switch")
    @classmethod
    def _chord(cls, value: str) -> str:
        # the kill switch's own names: never store an unarmable (or a too greedy) one; stored
        # in one spelling, so the settings page and the kernel show the chord the same way
        return normalise_chord(value)


SettingsListener = Callable[[Database, SettingsModel, SettingsModel], None]

_FIELDS: dict[str, str] = {}  # accepted spelling (snake or camel) -> field name
for _name, _info in SettingsModel.model_fields.items():
    _FIELDS[_name] = _name
    _FIELDS[_info.alias or _name] = _name


class Settings:
    """Load, update and watch settings. Class-level: there is one settings table per database."""

    _listeners: ClassVar[list[SettingsListener]] = []
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @staticmethod
    def defaults() -> SettingsModel:
        return SettingsModel()

    @staticmethod
    def load(db: Database) -> SettingsModel:
        stored: dict[str, Any] = {}
        for row in db.query("SELECT key, value_json FROM settings"):
            name = _FIELDS.get(str(row["key"]))
            if name is None:
                continue  # a key for another module or an older version: not ours to judge
            try:
                stored[name] = json.loads(row["value_json"])
            except json.JSONDecodeError:
                continue
        try:
            return SettingsModel.model_validate(stored)
        except ValidationError:
            # A hand-edited row must not take settings away: keep each valid key on its own.
            good: dict[str, Any] = {}
            for name, value in stored.items():
                try:
                    SettingsModel.model_validate({name: value})
                except ValidationError:
                    continue
                good[name] = value
            return SettingsModel.model_validate(good)

    @classmethod
    def update(cls, db: Database, **changes: Any) -> SettingsModel:
        """Validate and persist ``changes`` (snake_case or camelCase names); tell listeners."""
        unknown = sorted(k for k in changes if k not in _FIELDS)
        if unknown:
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                f"unknown setting(s): {', '.join(unknown)}",
                details={"known": sorted(SettingsModel.model_fields)},
            )
        named = {_FIELDS[k]: v for k, v in changes.items()}
        old = cls.load(db)
        try:
            new = SettingsModel.model_validate({**old.model_dump(), **named})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            msg = str(first["msg"])
            if first["type"] == "list_type":  # e.g. ``settings set allowedApps firefox``
                msg = 'expected a JSON array of strings, e.g. ["firefox"]'
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST, f"invalid setting {where}: {msg}"
            ) from None
        now = time.time()
        with db.transaction() as conn:
            for name in named:
                alias = SettingsModel.model_fields[name].alias or name
                value = new.model_dump(mode="json")[name]
                conn.execute(
                    "INSERT INTO settings(key, value_json, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value_json=excluded.value_json, "
                    "updated_at=excluded.updated_at",
                    (alias, json.dumps(value), now),
                )
        if new != old:
            cls._notify(db, old, new)
        return new

    @classmethod
    def reset(cls, db: Database, *names: str) -> SettingsModel:
        """Forget stored values so the defaults apply again (all settings when none named)."""
        unknown = sorted(n for n in names if n not in _FIELDS)
        if unknown:
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                f"unknown setting(s): {', '.join(unknown)}",
                details={"known": sorted(SettingsModel.model_fields)},
            )
        old = cls.load(db)
        fields = [_FIELDS[n] for n in names] if names else list(_FIELDS.values())
        aliases = {SettingsModel.model_fields[f].alias or f for f in fields} | set(fields)
        with db.transaction() as conn:
            conn.executemany("DELETE FROM settings WHERE key = ?", [(a,) for a in aliases])
        new = cls.load(db)
        if new != old:
            cls._notify(db, old, new)
        return new

    @staticmethod
    def revision(db: Database) -> tuple[float, int]:
        """Changes whenever any setting row is written or deleted, by any process."""
        row = db.query_one("SELECT MAX(updated_at) AS r, COUNT(*) AS n FROM settings")
        if row is None or row["r"] is None:
            return (0.0, 0)
        return (float(row["r"]), int(row["n"]))

    @classmethod
    def subscribe(cls, listener: SettingsListener) -> Callable[[], None]:
        with cls._lock:
            cls._listeners.append(listener)

        def unsubscribe() -> None:
            with cls._lock:
                if listener in cls._listeners:
                    cls._listeners.remove(listener)

        return unsubscribe

    @classmethod
    def _notify(cls, db: Database, old: SettingsModel, new: SettingsModel) -> None:
        with cls._lock:
            listeners = list(cls._listeners)
        for listener in listeners:
            listener(db, old, new)
