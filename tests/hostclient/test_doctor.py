"""``deskpilot doctor`` as a user runs it: a real subprocess of the console script."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.hostclient.config import LOCAL_TRUST_ENV

from .conftest import run

DESKPILOT = str(Path(sys.executable).parent / "deskpilot")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DESKPILOT_DATA_DIR"] = str(tmp_path / "data")
    env.update(extra)
    return env


@pytest.mark.desktop
def test_doctor_json_reports_readiness_and_latencies(
    desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    proc = run([DESKPILOT, "doctor", "--json"], _env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ready"] is True and report["trusted"] is True
    assert report["backends"] == {"screen": "x11", "accessibility": "at_spi", "input": "xtest"}
    assert set(report["permissions"].values()) == {"granted"}
    lat = report["latenciesMs"]
    for key in ("observe", "action", "postActionObserve"):
        assert isinstance(lat[key], float) and lat[key] > 0
    sup = report["supervisor"]
    assert sup["state"] == "ready"
    assert sup["restartBudgetPerSession"] == 1
    assert sup["budgetExhaustedSessions"] == []
    # where the vault key lives is said plainly (a file here: no keyring backend headless)
    vault = report["vault"]
    assert vault["keyStorage"] in {"file", "keyring"} and vault["detail"]
    if vault["keyStorage"] == "file":
        assert "0600" in vault["detail"] and vault["location"].startswith(str(tmp_path))
    # no screenshot, no tree, no window text in the report
    assert "deskpilot doctor" not in json.dumps({k: v for k, v in report.items() if k != "mode"})
    assert "iVBOR" not in proc.stdout and "tree" not in report["sample"]


@pytest.mark.desktop
def test_doctor_with_a_given_app(desktop: vdesk.DesktopState, tmp_path: Path) -> None:
    import shutil

    from .conftest import running

    zenity = shutil.which("zenity")
    if zenity is None:
        pytest.skip("zenity is not installed")
    with running([zenity, "--info", "--text", "given app"]) as app:
        import time

        time.sleep(1.0)
        proc = run([DESKPILOT, "doctor", "--json", "--app", str(app.pid)], _env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["sample"]["source"] == "--app"
    assert report["latenciesMs"]["observe"] is not None


@pytest.mark.desktop
def test_verify_host_is_read_only_and_writes_a_private_report(
    desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    path = tmp_path / "verify.json"
    proc = run([DESKPILOT, "doctor", "--verify-host", "--report", str(path)], _env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ready" in proc.stdout  # the human rendering
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    report = json.loads(path.read_text())
    assert report["mode"] == "verify_host" and report["ready"] is True
    assert report["latenciesMs"] is None and report["sample"] is None
    # the report is written exclusively: an existing file is never overwritten
    again = run([DESKPILOT, "doctor", "--verify-host", "--report", str(path)], _env(tmp_path))
    assert again.returncode == 4
    assert json.loads(path.read_text()) == report


def test_verify_host_without_a_display_is_not_ready(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    proc = run([DESKPILOT, "doctor", "--verify-host", "--json"], env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["trusted"] is True and report["ready"] is False
    assert report["diagnosticCode"] is not None


def test_verify_host_untrusted_exits_3(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env.pop(LOCAL_TRUST_ENV, None)
    proc = run([DESKPILOT, "doctor", "--verify-host", "--json"], env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["error"]["code"] == "native_host_untrusted"
    assert report["host"]["spawned"] is False


@pytest.mark.desktop
def test_doctor_says_what_gtk2_apps_need(desktop: vdesk.DesktopState, tmp_path: Path) -> None:
    """GIMP 2.10 gets a tree only with GTK_MODULES=gail:atk-bridge and Debian's two modules:
    the private desktop's session names them; a session that does not is told what to do.
    Information only: it does not make the desktop not ready."""
    from deskpilot.desktop.a11y_env import gtk2_bridge

    if gtk2_bridge({}).state == "no_gtk2":
        pytest.skip("no GTK 2 on this machine")
    if gtk2_bridge({}).state == "missing_packages":
        pytest.skip("libgail-common / libatk-adaptor are not installed")
    private = run([DESKPILOT, "doctor", "--verify-host", "--json"], _env(tmp_path))
    assert private.returncode == 0, private.stdout + private.stderr
    gtk2 = json.loads(private.stdout)["gtk2"]
    assert gtk2["state"] == "ok", gtk2
    assert gtk2["sessionModules"] == "gail:atk-bridge"
    own = _env(tmp_path)
    own.pop("GTK_MODULES", None)
    session = run([DESKPILOT, "doctor", "--verify-host"], own)
    assert session.returncode == 0, session.stdout + session.stderr
    assert "session_lacks_modules" in session.stdout, session.stdout
    assert "90atk-adaptor" in session.stdout, session.stdout
