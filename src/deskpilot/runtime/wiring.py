"""Assembling a runtime from the parts below it: the host backend, the kernel, the vault."""

from __future__ import annotations

from deskpilot.hostclient.api import DesktopBackend
from deskpilot.runtime.bridge import Runtime, RuntimeConfig
from deskpilot.runtime.kernel_seam import kernel_port
from deskpilot.runtime.snapshots import snapshot_port


def default_backend() -> DesktopBackend:
    """The supervised native host (spawned lazily on the first call)."""
    from deskpilot.hostclient.backend import HostBackend

    return HostBackend()


def build_runtime(
    config: RuntimeConfig | None = None, backend: DesktopBackend | None = None
) -> Runtime:
    backend = backend or default_backend()
    return Runtime(backend, kernel=kernel_port(backend), snapshots=snapshot_port(), config=config)
