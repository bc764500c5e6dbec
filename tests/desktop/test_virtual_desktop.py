"""`deskpilot desktop up|down|env` against real Xvfb, dbus-daemon and the AT-SPI launcher."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus
from Xlib import display as xdisplay

DESKPILOT = [sys.executable, "-m", "deskpilot.cli.main"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


async def _is_enabled(address: str) -> bool:
    bus = await MessageBus(bus_address=address).connect()
    try:
        reply = await bus.call(
            Message(
                destination="org.a11y.Bus",
                path="/org/a11y/bus",
                interface="org.freedesktop.DBus.Properties",
                member="Get",
                signature="ss",
                body=["org.a11y.Status", "IsEnabled"],
            )
        )
        assert reply is not None and reply.message_type == MessageType.METHOD_RETURN
        return bool(reply.body[0].value)
    finally:
        bus.disconnect()


@pytest.mark.desktop  # starts desktops of its own
def test_up_env_down_ends_exactly_what_up_started(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    # its own record of desktops: the second `down` below names a display that, once this
    # desktop ended, another process's new desktop may have taken (a test worker's: the
    # suite's next tests there all failed), and `down --display` ends whatever is on it
    env["XDG_RUNTIME_DIR"] = str(tmp_path)
    bystander = subprocess.Popen(["sleep", "60"])  # must survive `down`
    try:
        out = subprocess.run(
            [*DESKPILOT, "desktop", "up", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        state = json.loads(out.stdout)
        pids = state["pids"]
        assert set(pids) >= {"xvfb", "dbus", "at_spi"}
        assert state["env"]["DISPLAY"].startswith(":")
        assert all(_alive(p) for p in pids.values()), {n: _alive(p) for n, p in pids.items()}

        # the display answers, and accessibility is switched on for Chromium/Qt
        d = xdisplay.Display(state["env"]["DISPLAY"])
        assert d.screen().width_in_pixels == 1280
        assert d.query_extension("XTEST") is not None
        d.close()
        assert asyncio.run(_is_enabled(state["env"]["DBUS_SESSION_BUS_ADDRESS"])) is True

        env_out = subprocess.run(
            [*DESKPILOT, "desktop", "env", "--display", state["display"]],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert f"export DISPLAY={state['display']}" in env_out.stdout

        subprocess.run(
            [*DESKPILOT, "desktop", "down", "--display", state["display"]],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert not any(_alive(p) for p in pids.values())
        assert bystander.poll() is None
        gone = subprocess.run(
            [*DESKPILOT, "desktop", "down", "--display", state["display"]],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert gone.returncode == 1 and "no deskpilot desktop" in gone.stderr
    finally:
        bystander.kill()
        bystander.wait()


def test_fixture_desktop_is_usable(desktop: object) -> None:
    d = xdisplay.Display(os.environ["DISPLAY"])
    try:
        assert d.screen().height_in_pixels == 800
    finally:
        d.close()


@pytest.mark.desktop  # starts desktops of its own
def test_a_bare_down_never_guesses_and_dead_desktops_are_forgotten(tmp_path: Path) -> None:
    """Several processes of one user keep desktops (a test suite, an agent): `down` without
    --display must not end another's, and a desktop that died is not reported as up."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*DESKPILOT, "desktop", *args], env=env, capture_output=True, text=True, timeout=60
        )

    first = json.loads(cli("up", "--json").stdout)
    second = json.loads(cli("up", "--json").stdout)
    try:
        bare = cli("down")
        assert bare.returncode == 1 and "several deskpilot desktops" in bare.stderr
        assert _alive(first["pids"]["xvfb"]) and _alive(second["pids"]["xvfb"])
        assert cli("env", "--display", "../desktops/x").returncode != 0
        # env (read only) follows this shell's $DISPLAY when it names one of them; down does not
        bare_env = cli("env")
        assert bare_env.returncode == 1 and "several deskpilot desktops" in bare_env.stderr
        env["DISPLAY"] = second["display"]
        mine = cli("env")
        assert mine.returncode == 0 and f"export DISPLAY={second['display']}" in mine.stdout
        assert cli("down").returncode == 1 and _alive(second["pids"]["xvfb"])
        del env["DISPLAY"]
        # the second dies without `down`: its record goes, and the first is the only one
        os.kill(second["pids"]["xvfb"], 9)
        for _ in range(50):
            if not _alive(second["pids"]["xvfb"]):
                break
            import time

            time.sleep(0.1)
        only = cli("env")
        assert only.returncode == 0 and f"export DISPLAY={first['display']}" in only.stdout
        assert (
            not (tmp_path / f"deskpilot-{os.getuid()}" / "desktops")
            .joinpath(second["display"].lstrip(":") + ".json")
            .exists()
        )
        assert not _alive(second["pids"]["dbus"])  # what was left of it was ended too
    finally:
        cli("down", "--display", second["display"])
        cli("down", "--display", first["display"])
    assert not _alive(first["pids"]["xvfb"])
