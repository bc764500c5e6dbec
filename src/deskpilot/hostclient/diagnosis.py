"""``deskpilot doctor``: is the desktop usable, and how fast is it?

The report says runtime, permissions, protocol state and the
latencies of observe, action and post-action observe, never a screenshot, a tree, a window
title or typed content. ``ready`` is true only when the host is available and screen,
accessibility and input are all granted. It also says whether GTK 2 apps can get a tree
(``gtk2``: the Debian package missing, or what the person's session needs; information only).

Two modes:

- full: also measures latencies on a harmless sample window (a ``zenity --info`` dialog the
  doctor starts and closes, or the app given with ``--app``); the action is ``focus_window``,
  which changes nothing in the app;
- verify-host (the deployment self-check): read-only, no window, no action. It verifies the
  installed host, starts it, shakes hands, reads capabilities and stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from deskpilot.desktop.a11y_env import gtk2_bridge
from deskpilot.hostclient.artifact import verify_host_artifact
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.config import HostConfig
from deskpilot.hostclient.failures import diagnostic_code
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    Capabilities,
    ExecuteAction,
    FocusWindowAction,
    PermissionState,
    TargetSpec,
    WindowInfo,
)
from deskpilot.vault.keys import key_storage

SAMPLE_TITLE = "deskpilot doctor"
SAMPLE_WAIT_S = 15.0
UNTRUSTED_CODES = frozenset(
    {
        ErrorCode.NATIVE_HOST_UNTRUSTED,
        ErrorCode.NATIVE_HOST_MISSING,
        ErrorCode.NATIVE_HOST_INCOMPATIBLE,
    }
)


@dataclass
class Diagnosis:
    mode: str
    ready: bool = False
    trusted: bool = False
    host: dict[str, Any] = field(default_factory=dict)
    backends: dict[str, str] | None = None
    permissions: dict[str, str] | None = None
    supervisor: dict[str, Any] | None = None
    latencies_ms: dict[str, float | None] | None = None
    sample: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    diagnostic_code: str | None = None
    vault: dict[str, Any] | None = None
    #: can GTK 2 apps (GIMP 2.10) get an accessibility tree here (desktop/a11y_env.py)
    gtk2: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "ready": self.ready,
            "trusted": self.trusted,
            "diagnosticCode": self.diagnostic_code,
            "host": self.host,
            "backends": self.backends,
            "permissions": self.permissions,
            "supervisor": self.supervisor,
            "latenciesMs": self.latencies_ms,
            "sample": self.sample,
            "error": self.error,
            "vault": self.vault,
            "gtk2": self.gtk2,
            "generatedAt": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)


def readiness(caps: Capabilities) -> tuple[bool, str | None]:
    """Ready = available and all three permissions granted; else the first reason."""
    if not caps.available:
        return False, ErrorCode.ENVIRONMENT_UNAVAILABLE.value
    perms = caps.permissions
    for state, code in (
        (perms.screen, ErrorCode.SCREEN_PERMISSION_DENIED),
        (perms.accessibility, ErrorCode.ACCESSIBILITY_PERMISSION_DENIED),
        (perms.input, ErrorCode.INPUT_PERMISSION_DENIED),
    ):
        if state is not PermissionState.GRANTED:
            return False, code.value
    return True, None


def _record_error(report: Diagnosis, exc: DeskpilotError) -> None:
    report.error = exc.to_dict()
    report.diagnostic_code = report.diagnostic_code or diagnostic_code(exc)
    if exc.code in UNTRUSTED_CODES:
        report.trusted = False


async def diagnose(
    *, verify_only: bool = False, app: str | None = None, config: HostConfig | None = None
) -> Diagnosis:
    config = config or HostConfig()
    report = Diagnosis(mode="verify_host" if verify_only else "full")
    report.vault = _vault_key()
    report.gtk2 = _gtk2(config)
    try:
        artifact = verify_host_artifact(config.env)
    except DeskpilotError as exc:
        _record_error(report, exc)
        report.host = {"available": False, "spawned": False}
        return report
    report.trusted = True
    report.host["artifact"] = artifact.to_dict()
    backend = HostBackend(config, heartbeat=False)
    try:
        t0 = time.perf_counter()
        try:
            caps = await backend.capabilities()
        except DeskpilotError as exc:
            _record_error(report, exc)
            report.host.update(
                {"available": False, "spawned": backend.supervisor.start_attempts > 0}
            )
            return report
        report.host.update(
            {
                "available": caps.available,
                "spawned": True,
                "startMs": _ms(t0),
                "hostVersion": caps.host_version,
                "protocolVersion": caps.protocol_version,
                "platform": caps.platform,
                "sessionType": caps.session_type,
                "unavailableReason": caps.unavailable_reason,
            }
        )
        report.backends = caps.backends.wire()
        report.permissions = caps.permissions.wire()
        report.ready, code = readiness(caps)
        report.diagnostic_code = code
        if not verify_only and report.ready:
            await _measure(backend, report, app)
        report.supervisor = backend.status()
    finally:
        await backend.close()
    return report


def _vault_key() -> dict[str, Any]:
    """Where the snapshot vault's key is (or would be) kept, said plainly: on a headless
    machine without a usable keyring it is a 0600 file beside the vault. Read-only."""
    try:
        info = key_storage()
    except Exception as exc:  # a broken keyring must not break the doctor
        return {"keyStorage": "unknown", "detail": f"could not tell: {type(exc).__name__}"}
    return {"keyStorage": info.storage.value, "location": info.location, "detail": info.detail}


def _gtk2(config: HostConfig) -> dict[str, Any]:
    """Whether GTK 2 apps get a tree where the host runs: this machine's GTK 2 modules and
    the environment the host (and the apps of this session) start with. Information only:
    it never makes the desktop not ready (other apps are read as ever, GTK 2 ones by OCR)."""
    if config.remote_command is not None:
        return {
            "state": "not_checked",
            "missing": [],
            "sessionModules": None,
            "advice": "the host runs on another machine: run deskpilot doctor there",
        }
    return gtk2_bridge(config.env if config.env is not None else os.environ).to_dict()


def _parse_app(app: str) -> TargetSpec:
    if app.lower().startswith("0x"):
        return TargetSpec(window_id=app.lower())
    if app.isdigit():
        return TargetSpec(pid=int(app))
    return TargetSpec(app=app)


async def _wait_window(backend: HostBackend, pid: int) -> WindowInfo:
    deadline = time.monotonic() + SAMPLE_WAIT_S
    while time.monotonic() < deadline:
        for window in await backend.list_windows():
            if window.app.pid == pid and window.visible:
                return window
        await asyncio.sleep(0.1)
    raise DeskpilotError(
        ErrorCode.TARGET_NOT_FOUND, f"the sample window (pid {pid}) did not appear"
    )


async def _measure(backend: HostBackend, report: Diagnosis, app: str | None) -> None:
    session = f"doctor-{uuid.uuid4().hex[:12]}"
    launched = None
    report.latencies_ms = {"observe": None, "action": None, "postActionObserve": None}
    sample: dict[str, Any] = {"action": "focus_window"}
    report.sample = sample
    try:
        if app is not None:
            target = _parse_app(app)
            sample["source"] = "--app"
        else:
            zenity = shutil.which("zenity")
            if zenity is None:
                sample["skipped"] = "zenity is not installed; pass --app to measure latencies"
                return
            from deskpilot.desktop.apps import launch

            launched = launch([zenity, "--info", "--title", SAMPLE_TITLE, "--text", SAMPLE_TITLE])
            window = await _wait_window(backend, launched.pid)
            target = TargetSpec(window_id=window.window_id)
            sample["source"] = "zenity --info"
        await backend.bind_target(session, target)
        t0 = time.perf_counter()
        state = await backend.observe(session, include_screenshot=True)
        report.latencies_ms["observe"] = _ms(t0)
        obs = state.observation
        sample["app"] = obs.app.executable or obs.app.wm_class or obs.app.name
        sample["elements"] = obs.element_count
        t0 = time.perf_counter()
        request = ExecuteAction(
            id=0,
            session_id=session,
            frame_id=obs.frame_id,
            tree_version=obs.tree_version,
            action=FocusWindowAction(),
        )
        result = (await backend.execute(request)).result
        report.latencies_ms["action"] = _ms(t0)
        sample["dispatched"] = result.dispatched
        sample["method"] = result.method
        t0 = time.perf_counter()
        await backend.observe(session, include_screenshot=True)
        report.latencies_ms["postActionObserve"] = _ms(t0)
    except DeskpilotError as exc:
        sample["error"] = exc.to_dict()
    finally:
        with contextlib.suppress(DeskpilotError):
            await backend.cancel_session(session)
        if launched is not None:
            await asyncio.to_thread(launched.stop)


def write_report(path: os.PathLike[str] | str, text: str) -> None:
    """Write a new file with mode 0600, exclusively: an existing file or symlink is refused."""
    fd = os.open(
        os.fspath(path),
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
    )
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
