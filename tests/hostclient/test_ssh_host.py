"""The host on another machine over SSH (``--host-command``), against a real Debian sshd.

The "remote" is this machine: the test starts its own ``sshd`` on loopback (a free port, a
throwaway host key and client key in a temp dir, its own config), and the remote command runs
the host with the private desktop's DISPLAY and D-Bus address. What is checked: the framed
protocol works over the SSH channel end to end (an MCP client of ``deskpilot serve
--host-command`` reads a calculator); the remote's SSH host key must be pinned, a changed key
is refused even with ``--pin-host-key``; the remote verifies its own install (a wheel's
RECORD passes, an editable install without local trust is refused with its reason); ssh's own
failures are typed; a host command that is not an ssh argv is refused before anything runs.
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_types import TextContent

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import launch_accessible
from deskpilot.hostclient.client import HostClient
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.hostclient.remote import (
    known_hosts_path,
    parse_host_command,
    ssh_argv,
    ssh_environment,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.frames import FrameReader, FrameWriter
from mcp import Client, StdioServerParameters
from sshd_kit import SSHD, VENV_PYTHON, Sshd, start_sshd

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(not SSHD.exists(), reason="openssh-server missing"),
]

REPO = Path(__file__).resolve().parents[2]
DESKPILOT = REPO / ".venv" / "bin" / "deskpilot"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def remote_env(desktop: vdesk.DesktopState) -> dict[str, str]:
    """What the remote host needs to find the desktop (ssh passes no environment)."""
    return {k: desktop.env[k] for k in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}


def _config(sshd: Sshd, command: str, tmp_path: Path, *, pin: bool = False) -> HostConfig:
    env = {k: v for k, v in os.environ.items() if k != LOCAL_TRUST_ENV}
    return HostConfig(
        remote_command=parse_host_command(command),
        pin_host_key=pin,
        env=env,
        log_path=tmp_path / "host.log",
        heartbeat_interval_s=3600.0,
    )


async def _start_fails(config: HostConfig) -> DeskpilotError:
    client = HostClient(config)
    with pytest.raises(DeskpilotError) as info:
        await client.start()
    assert client.pid is None or not client.alive
    return info.value


# ---------------------------------------------------------------------- the argv rule


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("sh -c 'ssh box deskpilot-host'", "without a shell"),
        ("ssh box deskpilot-host | tee log", "shell operator"),
        ("ssh box $(evil)", "shell operator"),
        # one token here, but the remote sshd hands the command to the user's shell
        ("ssh box 'deskpilot-host; id'", "remote shell would read"),
        ("ssh box deskpilot-host';id'", "remote shell would read"),
        ("ssh box 'deskpilot-host|id'", "remote shell would read"),
        ('ssh box "deskpilot-host\nid"', "shell operator"),
        ("ssh box deskpilot-host '`id`'", "shell operator"),
        ("ssh box 'deskpilot-host >/tmp/x'", "remote shell would read"),
        # single-letter flags override deskpilot's -o, before or after the destination
        ("ssh -A box deskpilot-host", "-A is refused"),
        ("ssh box -X deskpilot-host", "-X is refused"),
        ("ssh -Y box deskpilot-host", "-Y is refused"),
        ("ssh -qA box deskpilot-host", "-A is refused"),
        ("ssh -S /tmp/ctl box deskpilot-host", "-S is refused"),
        ("ssh -M box deskpilot-host", "-M is refused"),
        ("ssh -F /tmp/cfg box deskpilot-host", "-F is refused"),
        ("ssh -J jump box deskpilot-host", "-J is refused"),
        ("ssh -L 1:h:2 box deskpilot-host", "-L is refused"),
        ("ssh -t box deskpilot-host", "-t is refused"),
        ("ssh -e ~ box deskpilot-host", "-e is refused"),
        ("ssh -o 'ProxyCommand=sh -c id' box deskpilot-host", "'proxycommand' is refused"),
        ("ssh -oProxyCommand=id box deskpilot-host", "'proxycommand' is refused"),
        ("ssh -o 'LocalCommand id' box deskpilot-host", "'localcommand' is refused"),
        ("ssh -o PermitLocalCommand=yes box deskpilot-host", "'permitlocalcommand' is refused"),
        ("ssh -o StrictHostKeyChecking=no box deskpilot-host", "is refused"),
        ("ssh -o ControlPath=/tmp/c box deskpilot-host", "is refused"),
        ("ssh box -o ForwardAgent=yes deskpilot-host", "is refused"),
        ("ssh -o SendEnv=AWS_SECRET_ACCESS_KEY box deskpilot-host", "'sendenv' is refused"),
        ("ssh -p", "needs a value"),
        ("python -m deskpilot.host", "must run ssh"),
        ("ssh box", "needs a destination and the remote command"),
        ("ssh 'unclosed", "cannot be split"),
    ],
)
def test_a_host_command_is_an_ssh_argv(text: str, said: str) -> None:
    with pytest.raises(DeskpilotError) as info:
        parse_host_command(text)
    assert info.value.code is ErrorCode.INVALID_REQUEST
    assert said in info.value.message


@pytest.mark.parametrize(
    "text",
    [
        "ssh user@box deskpilot-host",
        "ssh -p 2222 -i ~/.ssh/id_ed25519 -l me -4 -q box deskpilot-host",
        "ssh -p2222 -oPort=2222 -o 'ConnectTimeout 5' -o IdentitiesOnly=yes box deskpilot-host",
        "ssh box -o ServerAliveInterval=10 ~/venv/bin/deskpilot-host",
        "ssh -o SetEnv=DISPLAY=:1 box deskpilot-host",
        "ssh ssh://me@box:2222 env DISPLAY=:1 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/b,guid=1 "
        "/opt/py/bin/python -I -m deskpilot.hostclient.remote_host",
        "ssh -- box deskpilot-host",
    ],
)
def test_the_allowed_ssh_flags_pass_unchanged(text: str) -> None:
    assert parse_host_command(text) == tuple(shlex.split(text))


def test_ssh_runs_without_this_machines_display(tmp_path: Path) -> None:
    """X forwarding is off: ssh is not given DISPLAY (serve's nor an eval task's); its
    agent socket stays (authentication, never forwarded)."""
    base = {"DISPLAY": ":0", "XAUTHORITY": "/x", "SSH_AUTH_SOCK": "/a", "PATH": "/bin"}
    assert ssh_environment(base) == {"SSH_AUTH_SOCK": "/a", "PATH": "/bin"}
    from deskpilot.cli.remote_host import remote_kernel
    from deskpilot.hostclient import backend

    given: list[HostConfig] = []

    class Recorder(backend.HostBackend):
        def __init__(self, config: HostConfig) -> None:
            given.append(config)
            super().__init__(config)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DISPLAY", ":42")
        mp.setattr(backend, "HostBackend", Recorder)
        remote_kernel("ssh box deskpilot-host", False)
    (serve_config,) = given
    assert serve_config.env is not None and "DISPLAY" not in serve_config.env
    assert serve_config.remote_command == ("ssh", "box", "deskpilot-host")


def test_deskpilot_options_come_first_and_pin_the_key(tmp_path: Path) -> None:
    argv = ssh_argv(("ssh", "-o", "StrictHostKeyChecking=no", "box", "x"), known_hosts=tmp_path)
    first = argv.index("StrictHostKeyChecking=yes")
    assert first < argv.index("StrictHostKeyChecking=no")  # ssh keeps the first value
    assert f"UserKnownHostsFile={tmp_path}" in argv and "GlobalKnownHostsFile=/dev/null" in argv
    assert argv[1:4] == ("-T", "-e", "none")  # no tty, no escape character on binary frames
    assert argv[-2:] == ("box", "x")
    assert "StrictHostKeyChecking=accept-new" in ssh_argv(("ssh", "b", "x"), pin=True)


def test_serve_refuses_a_shell_line_before_starting(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(DESKPILOT), "serve", "--host-command", "bash -c 'ssh box deskpilot-host'"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "without a shell" in proc.stderr


def test_the_console_entry_refuses_and_answers_the_handshake(tmp_path: Path) -> None:
    """``deskpilot-host`` re-runs itself as ``python -I -m`` and, refused, answers the first
    frame with the typed error (its id, its reason) and exits 77: no host was started."""
    buf = io.BytesIO()
    FrameWriter(buf).write_json({"type": "get_capabilities", "id": 1, "protocolVersion": 1})
    env = {k: v for k, v in os.environ.items() if k != LOCAL_TRUST_ENV}
    proc = subprocess.run(
        [str(VENV_PYTHON), "-c", "from deskpilot.hostclient.remote_host import main; main()"],
        input=buf.getvalue(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 77, proc.stderr
    reply = FrameReader(io.BytesIO(proc.stdout)).read().json()
    assert reply["id"] == 1 and reply["code"] == "native_host_untrusted"
    assert reply["details"] == {"reason": "development_install", "remote": True}
    assert b"refused to start" in proc.stderr


# ---------------------------------------------------------------------- pinning


async def test_an_unpinned_host_key_is_refused_with_how_to_pin(
    sshd: Sshd, remote_env: dict[str, str], tmp_path: Path
) -> None:
    known_hosts_path().write_text("")
    err = await _start_fails(_config(sshd, sshd.command(remote_env), tmp_path))
    assert err.code is ErrorCode.NATIVE_HOST_UNTRUSTED, err
    assert err.details["reason"] == "host_key_unknown"
    assert "--pin-host-key" in err.message and str(known_hosts_path()) in err.message


async def test_pin_once_then_a_changed_host_key_is_refused(
    sshd: Sshd, remote_env: dict[str, str], tmp_path: Path
) -> None:
    known_hosts_path().write_text("")
    command = sshd.command(remote_env)
    client = HostClient(_config(sshd, command, tmp_path, pin=True))
    caps = await client.start()
    try:
        assert caps.available is True
        assert client.artifact is not None and client.artifact.mode == "remote"
        assert client.artifact.version == caps.host_version
        pinned = known_hosts_path().read_text().split()
        assert pinned[0] == f"[127.0.0.1]:{sshd.port}"
        assert pinned[2] == sshd.host_key("host_a").with_suffix(".pub").read_text().split()[1]
    finally:
        await client.close()
    # the machine now presents another key: refused, and --pin-host-key does not re-pin
    sshd.start(sshd.host_key("host_b"))
    try:
        for pin in (False, True):
            err = await _start_fails(_config(sshd, command, tmp_path, pin=pin))
            assert err.code is ErrorCode.NATIVE_HOST_UNTRUSTED, err
            assert err.details["reason"] == "host_key_mismatch"
    finally:
        sshd.start(sshd.host_key("host_a"))


async def test_ssh_authentication_failure_is_typed(
    sshd: Sshd, remote_env: dict[str, str], tmp_path: Path
) -> None:
    sshd.pin(sshd.host_key("host_a"))
    stranger = sshd.host_key("stranger_key")  # a key sshd was never told about
    err = await _start_fails(_config(sshd, sshd.command(remote_env, key=stranger), tmp_path))
    assert err.code is ErrorCode.NATIVE_HOST_UNAVAILABLE, err
    assert err.details["reason"] == "ssh_auth_failed"


# ---------------------------------------------------------------------- the remote's own check


async def test_the_remote_refuses_an_editable_install_without_local_trust(
    sshd: Sshd, remote_env: dict[str, str], tmp_path: Path
) -> None:
    sshd.pin(sshd.host_key("host_a"))
    err = await _start_fails(_config(sshd, sshd.command(remote_env, trust=False), tmp_path))
    assert err.code is ErrorCode.NATIVE_HOST_UNTRUSTED, err
    assert err.details["reason"] == "development_install"
    assert err.details["remote"] is True
    assert "remote host refused to start" in err.message


async def test_the_remote_verifies_a_wheel_install_by_its_record(
    sshd: Sshd, remote_env: dict[str, str], wheel_venv: Path, tmp_path: Path
) -> None:
    sshd.pin(sshd.host_key("host_a"))
    command = sshd.command(remote_env, python=wheel_venv, trust=False)
    client = HostClient(_config(sshd, command, tmp_path))
    caps = await client.start()
    try:
        assert caps.host_version == "0.1.0" and caps.available is True
    finally:
        await client.close()
    log = (tmp_path / "host.log").read_text()
    assert "deskpilot-host: verified install 0.1.0" in log


WHERE = "import deskpilot, os; print(os.path.dirname(deskpilot.__file__))"


def _wheel_package(python: Path) -> Path:
    """Where the wheel venv's interpreter imports deskpilot from (its site-packages)."""
    out = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            "import deskpilot, os; print(os.path.dirname(deskpilot.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return Path(out.stdout.strip())


async def test_an_eval_task_checks_the_whole_package_not_only_the_host(
    sshd: Sshd, remote_env: dict[str, str], wheel_venv: Path, tmp_path: Path
) -> None:
    """``deskpilot-host --eval-task`` runs the setup's launch policy and the verification
    engine on the remote too: its install check covers every module of the package. A
    changed eval module refuses an eval task (with the file named) while a plain host, whose
    modules are intact, still starts."""
    from deskpilot.eval.remote_desktop import RemoteTaskDesktop, RemoteTaskError
    from deskpilot.eval.suite import SuiteTask

    sshd.pin(sshd.host_key("host_a"))
    command = parse_host_command(sshd.command({}, python=wheel_venv, trust=False))
    task = SuiteTask.model_validate(
        {
            "id": "t",
            "instruction": "nothing",
            "success": [{"kind": "file", "path": "${TASK_DIR}/x", "assertion": "exists"}],
        }
    )
    env = {k: v for k, v in os.environ.items() if k != LOCAL_TRUST_ENV}
    remote = RemoteTaskDesktop(command, env, tmp_path / "ok.log")
    try:
        ready = remote.open(task, 800, 600)
        assert ready.version == "0.1.0" and ready.display.startswith(":")
    finally:
        remote.close()
    said = (tmp_path / "ok.log").read_text()
    checked = int(said.split("verified install 0.1.0 (")[1].split(" files")[0])
    host_only = len(list((_wheel_package(wheel_venv) / "host").rglob("*.py")))
    assert checked > 2 * host_only, said  # the package, not the host's trees only
    assert "an eval task's desktop" in said
    changed = _wheel_package(wheel_venv) / "eval" / "task_setup.py"
    original = changed.read_bytes()
    try:
        changed.write_bytes(original + b"\n# changed after install\n")
        remote = RemoteTaskDesktop(command, env, tmp_path / "changed.log")
        try:
            with pytest.raises(RemoteTaskError) as info:
                remote.open(task, 800, 600)
        finally:
            remote.close()
        assert info.value.stage == "trust"
        assert "deskpilot/eval/task_setup.py" in str(info.value), info.value
        # the host's own modules are intact: a plain host starts
        plain = sshd.command(remote_env, python=wheel_venv, trust=False)
        client = HostClient(_config(sshd, plain, tmp_path))
        caps = await client.start()
        await client.close()
        assert caps.available is True
    finally:
        changed.write_bytes(original)


async def test_a_host_attaches_only_to_a_private_desktop(
    sshd: Sshd, dp_desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    """``--desktop=:N``: the remote host takes that private desktop's display and buses from
    its state file (the remote command names none); a display that is not one is refused."""
    sshd.pin(sshd.host_key("host_a"))
    base = sshd.command({})
    client = HostClient(_config(sshd, f"{base} --desktop={dp_desktop.display}", tmp_path))
    app = launch_accessible(["gnome-calculator"])
    try:
        await client.start()
        windows = await client.list_windows()
        assert any(w.app.pid == app.pid for w in windows), windows
    finally:
        await client.close()
        app.stop()
    assert f"attached to {dp_desktop.display}" in (tmp_path / "host.log").read_text()
    err = await _start_fails(_config(sshd, f"{base} --desktop=:987", tmp_path))
    assert err.code is ErrorCode.ENVIRONMENT_UNAVAILABLE, err
    assert err.details["reason"] == "no_private_desktop" and err.details["remote"] is True
    err = await _start_fails(_config(sshd, f"{base} --desktop=:abc", tmp_path))
    assert err.code is ErrorCode.INVALID_REQUEST and "takes no argument" in err.message, err


# ---------------------------------------------------------------------- end to end


async def test_serve_over_ssh_observes_a_calculator(
    sshd: Sshd, remote_env: dict[str, str], dp_desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    sshd.pin(sshd.host_key("host_a"))
    app = launch_accessible(["gnome-calculator"])
    try:
        # the server has no desktop of its own: only the remote command knows the display
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", LOCAL_TRUST_ENV)
        }
        params = StdioServerParameters(
            command=str(DESKPILOT),
            args=["serve", "--host-command", sshd.command(remote_env)],
            env=env,
        )
        async with Client(params) as client:
            r = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
            text = "".join(c.text for c in r.content if isinstance(c, TextContent))
            assert not r.is_error, text
            assert text.splitlines()[0] == f'App=(name="gnome-calculator", pid={app.pid})'
            assert '- window "Calculator" [1]' in text
    finally:
        app.stop()
