"""A real OpenSSH server on loopback for the tests of ``--host-command`` (Debian's ``sshd``).

The "remote" is this machine: :func:`start_sshd` starts ``/usr/sbin/sshd`` on a free loopback
port with a throwaway host key and client key in a temp dir and its own config (no PAM, keys
only); :meth:`Sshd.command` is a ``--host-command`` that logs in with the client key and runs
the remote entry (``python -I -m deskpilot.hostclient.remote_host``) of a given Python.
Used by tests/hostclient/test_ssh_host.py (the host over ssh) and tests/eval/test_eval_ssh.py
(eval tasks whose desktops are on the "remote").
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from deskpilot.hostclient.config import LOCAL_TRUST_ENV
from deskpilot.hostclient.remote import known_hosts_path

REPO = Path(__file__).resolve().parents[1]
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
ENTRY = ("-I", "-m", "deskpilot.hostclient.remote_host")
SSHD = Path("/usr/sbin/sshd")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    root: Path
    port: int
    client_key: Path
    proc: subprocess.Popen[bytes] | None = None

    def host_key(self, name: str) -> Path:
        key = self.root / name
        if not key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
            )
        return key

    def start(self, host_key: Path) -> None:
        self.stop()
        config = self.root / "sshd_config"
        config.write_text(
            f"ListenAddress 127.0.0.1\nPort {self.port}\nHostKey {host_key}\n"
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}\n"
            f"PidFile {self.root / 'sshd.pid'}\nUsePAM no\nStrictModes no\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\nLogLevel ERROR\n"
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        log = (self.root / "sshd.log").open("ab")
        self.proc = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(config)], stdout=log, stderr=log
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.root / "sshd.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("sshd did not listen")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)
        self.proc = None

    def pin(self, host_key: Path) -> None:
        """What ``ssh-keyscan`` + appending to deskpilot's known_hosts does, from the key."""
        kind, blob = host_key.with_suffix(".pub").read_text().split()[:2]
        known_hosts_path().write_text(f"[127.0.0.1]:{self.port} {kind} {blob}\n")

    def command(
        self,
        env: dict[str, str],
        *,
        python: Path = VENV_PYTHON,
        key: Path | None = None,
        trust: bool = True,
    ) -> str:
        """The ``--host-command`` text: ssh to the loopback sshd, the remote entry of
        ``python`` with ``env`` set (the desktop it should use, when it should use one)."""
        remote_env = [f"{k}={v}" for k, v in env.items()]
        if trust:
            remote_env.append(f"{LOCAL_TRUST_ENV}=1")
        argv = [
            "ssh",
            "-p",
            str(self.port),
            "-i",
            str(key or self.client_key),
            "-o",
            "IdentitiesOnly=yes",
            "root@127.0.0.1" if os.getuid() == 0 else f"{os.environ['USER']}@127.0.0.1",
            "env",
            *remote_env,
            str(python),
            *ENTRY,
        ]
        return shlex.join(argv)


def start_sshd(root: Path) -> Sshd:
    """An sshd on a free loopback port, serving the key pair made in ``root`` (0700)."""
    os.chmod(root, 0o700)
    client_key = root / "client_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(client_key)], check=True
    )
    shutil.copy(client_key.with_suffix(".pub"), root / "authorized_keys")
    server = Sshd(root, free_port(), client_key)
    server.start(server.host_key("host_a"))
    return server
