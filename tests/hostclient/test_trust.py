"""Artifact trust (RECORD hashes) and parent verification, with real installs and processes.

The strict path runs against a real wheel of the project installed by pip into a throwaway
venv (``wheel_venv``): a regular install, no override. There the client verifies the host's
modules and the host verifies that its parent is a deskpilot process.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.host import trust as host_trust
from deskpilot.hostclient import artifact
from deskpilot.hostclient.config import LOCAL_TRUST_ENV
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

from . import wheelkit
from .conftest import run, strict_env

# ---------------------------------------------------------------- pure rules


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("0.1.0", True),
        ("0.1.1", True),
        ("0.2", True),
        ("1.0.0", True),
        ("0.1.0.post1", True),
        ("0.1.0rc1", False),
        ("0.1.0.dev3", False),
        ("0.0.9", False),
        ("garbage", False),
    ],
)
def test_minimum_version(version: str, ok: bool) -> None:
    assert artifact.version_at_least(version) is ok


def test_parent_command_lines(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "deskpilot"
    script.write_text("#!/bin/sh\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "deskpilot").write_text("")
    ok = host_trust.runs_deskpilot
    assert ok(("python", str(script), "serve"), bin_dir)
    assert ok(("python", "-I", str(script), "doctor"), bin_dir)
    assert ok(("python", "-m", "deskpilot.cli.main", "doctor"), bin_dir)
    assert ok(("python", "-X", "dev", "-m", "deskpilot"), bin_dir)
    assert ok(("python", "-Im", "deskpilot.mcp"), bin_dir)
    assert not ok(("python", "-m", "deskpilotx"), bin_dir)
    assert not ok(("python", "-c", "import deskpilot"), bin_dir)
    assert not ok(("python", str(other / "deskpilot")), bin_dir)  # another environment's
    assert not ok(("python", "/usr/bin/pytest"), bin_dir)
    assert not ok(("bash",), bin_dir)


def test_start_time_survives_odd_process_names(tmp_path: Path) -> None:
    proc = tmp_path / "4242"
    proc.mkdir()
    # field 3 (state) .. field 21, then field 22 = starttime
    fields = ["S"] + [str(i) for i in range(4, 22)] + ["987654"] + ["0"] * 30
    (proc / "stat").write_bytes(b"4242 (we) ird) name) " + " ".join(fields).encode())
    assert host_trust._start_time(4242, tmp_path) == 987654


def test_editable_install_needs_the_override() -> None:
    env = {k: v for k, v in os.environ.items() if k != LOCAL_TRUST_ENV}
    with pytest.raises(DeskpilotError) as info:
        artifact.verify_host_artifact(env)
    assert info.value.code is ErrorCode.NATIVE_HOST_UNTRUSTED
    assert info.value.details["reason"] == "development_install"
    report = artifact.verify_host_artifact({**env, LOCAL_TRUST_ENV: "1"})
    assert report.mode == "development" and report.local_trust


# ---------------------------------------------------------------- the host's own check


def test_host_started_from_a_shell_exits_77(tmp_path: Path) -> None:
    env = strict_env(tmp_path)
    # "; exit $?" keeps bash as the parent (no exec optimisation)
    cmd = f"'{sys.executable}' -m deskpilot.host </dev/null; exit $?"
    proc = run(["bash", "-c", cmd], env, timeout=60)
    assert proc.returncode == 77, proc.stderr
    assert "is not this Python interpreter" in proc.stderr
    assert proc.stdout == ""  # nothing reached the frame stream


def test_host_under_another_program_exits_77(tmp_path: Path) -> None:
    env = strict_env(tmp_path)
    code = (
        "import subprocess,sys; sys.exit(subprocess.call([sys.executable,'-m','deskpilot.host']))"
    )
    proc = run([sys.executable, "-c", code], env, timeout=60)
    assert proc.returncode == 77, proc.stderr


def test_override_is_honoured_for_the_editable_install(
    desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    env = {**strict_env(tmp_path), LOCAL_TRUST_ENV: "1"}
    proc = run(["bash", "-c", f"'{sys.executable}' -m deskpilot.host </dev/null; exit $?"], env)
    assert proc.returncode == 0, proc.stderr  # ran, then left cleanly at stdin EOF


# ---------------------------------------------------------------- a regular install


def _bin(python: Path, name: str) -> str:
    return str(python.parent / name)


def test_regular_install_verifies_and_runs_without_override(
    wheel_venv: Path, desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    report_path = tmp_path / "report.json"
    proc = run(
        [
            _bin(wheel_venv, "deskpilot"),
            "doctor",
            "--verify-host",
            "--json",
            "--report",
            str(report_path),
        ],
        strict_env(tmp_path / "data"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["trusted"] is True and report["ready"] is True
    assert report["host"]["artifact"]["mode"] == "verified"
    assert report["host"]["artifact"]["filesChecked"] > 10
    assert report["host"]["artifact"]["localTrust"] is False
    assert report["latenciesMs"] is None  # read-only: no window, no action
    assert stat.S_IMODE(report_path.stat().st_mode) == 0o600
    assert json.loads(report_path.read_text())["ready"] is True


def test_regular_install_refuses_the_override(wheel_venv: Path, tmp_path: Path) -> None:
    env = {**strict_env(tmp_path / "data"), LOCAL_TRUST_ENV: "1"}
    proc = run([_bin(wheel_venv, "deskpilot"), "doctor", "--verify-host", "--json"], env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["error"]["code"] == "native_host_untrusted"
    assert report["error"]["details"]["reason"] == "local_trust_refused"
    assert report["host"]["spawned"] is False
    # and the host itself refuses it too, even when started directly
    host = run(["bash", "-c", f"'{wheel_venv}' -m deskpilot.host </dev/null; exit $?"], env)
    assert host.returncode == 77
    assert "only honoured for a development" in host.stderr


def _append(path: Path) -> None:
    with path.open("a") as f:
        f.write("\n# tampered\n")


def _symlink(path: Path) -> None:
    copy = path.with_name(path.name + ".orig")
    shutil.copy2(path, copy)
    path.unlink()
    path.symlink_to(copy)


def _world_writable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IWOTH)


def _extra_module(path: Path) -> None:
    (path.parent / "injected.py").write_text("print('hello')\n")


@pytest.fixture
def pristine(wheel_venv: Path) -> Iterator[Path]:
    """The installed host package; restored byte for byte after the test."""
    site_pkg = wheelkit.installed_file(wheel_venv, "deskpilot")
    backup = Path(str(site_pkg) + ".bak")
    shutil.copytree(site_pkg, backup, symlinks=True)
    try:
        yield site_pkg
    finally:
        shutil.rmtree(site_pkg)
        backup.rename(site_pkg)


@pytest.mark.parametrize(
    ("tamper", "target", "needle"),
    [
        (_append, "host/server.py", "does not match its installed sha256"),
        (_append, "protocol/frames.py", "changed size"),
        (_append, "__init__.py", "changed size"),
        (_symlink, "host/handler.py", "symlink"),
        (_world_writable, "host/__main__.py", "writable"),
        (_extra_module, "host/__main__.py", "not part of the installed distribution"),
    ],
)
def test_tampered_install_is_untrusted_and_nothing_is_spawned(
    wheel_venv: Path,
    pristine: Path,
    tmp_path: Path,
    tamper: Callable[[Path], None],
    target: str,
    needle: str,
) -> None:
    path = pristine / target
    if tamper is _append and target == "host/server.py":
        # same size, different bytes: only the hash can tell
        data = bytearray(path.read_bytes())
        data[-2] = ord("#") if data[-2] != ord("#") else ord(" ")
        path.write_bytes(bytes(data))
    else:
        tamper(path)
    data_dir = tmp_path / "data"
    proc = run(
        [_bin(wheel_venv, "deskpilot"), "doctor", "--verify-host", "--json"], strict_env(data_dir)
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["trusted"] is False and report["ready"] is False
    assert report["error"]["code"] == "native_host_untrusted"
    assert needle in report["error"]["message"]
    assert report["host"]["spawned"] is False
    assert not (data_dir / "logs" / "host.log").exists()  # no host process was started


def test_an_old_version_is_untrusted(tmp_path: Path) -> None:
    python = wheelkit.make_venv(
        tmp_path / "venv", wheelkit.build_wheel(tmp_path / "dist", version="0.0.9")
    )
    proc = run(
        [_bin(python, "deskpilot"), "doctor", "--verify-host", "--json"], strict_env(tmp_path)
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["error"]["code"] == "native_host_untrusted"
    assert "older than the minimum 0.1.0" in report["error"]["message"]
    assert report["host"]["spawned"] is False
