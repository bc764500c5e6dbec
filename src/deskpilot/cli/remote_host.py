"""``--host-command`` and ``--pin-host-key``: the host on another machine, for the commands
that drive a desktop (``serve``, ``run``). One definition, so both parse, refuse and name the
options the same way; ``deskpilot eval`` hands its remote desktop to the servers and
operators it starts through :data:`HOST_COMMAND_ENV`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from deskpilot.kernel.kernel import Kernel

#: = hostclient.remote.HOST_COMMAND_ENV (not imported: the CLI starts without hostclient)
HOST_COMMAND_ENV = "DESKPILOT_HOST_COMMAND"

HOST_COMMAND_HELP = (
    'run the host on another machine: ssh\'s argv, e.g. "ssh user@box deskpilot-host" '
    "(no shell; the remote's host key must be pinned, docs/host.md)"
)
PIN_HELP = "with --host-command: pin an unknown SSH host key (TOFU)"


def host_command_option() -> Any:
    """The ``--host-command`` option (a typer default for a ``str | None`` parameter)."""
    return typer.Option(None, "--host-command", envvar=HOST_COMMAND_ENV, help=HOST_COMMAND_HELP)


def pin_host_key_option() -> Any:
    """The ``--pin-host-key`` option (a typer default for a ``bool`` parameter)."""
    return typer.Option(False, "--pin-host-key", help=PIN_HELP)


def remote_kernel(host_command: str | None, pin: bool) -> Kernel | None:
    """The kernel for ``--host-command`` (None = the default local host)."""
    if host_command is None:
        if pin:
            raise typer.BadParameter("needs --host-command", param_hint="--pin-host-key")
        return None
    from deskpilot.hostclient.backend import HostBackend
    from deskpilot.hostclient.config import HostConfig
    from deskpilot.hostclient.remote import parse_host_command, ssh_environment
    from deskpilot.kernel.kernel import Kernel
    from deskpilot.protocol.errors import DeskpilotError

    try:
        argv = parse_host_command(host_command)
    except DeskpilotError as exc:
        raise typer.BadParameter(exc.message, param_hint="--host-command") from None
    # ssh starts without this machine's display (hostclient/remote.py, ssh_environment)
    config = HostConfig(remote_command=argv, pin_host_key=pin, env=ssh_environment(os.environ))
    return Kernel(HostBackend(config))
