"""Assembling a runtime from the parts below it: the host backend, the kernel, the vault.

This is the composition root, the one runtime module that names the kernel's implementation
and the host client (the import contracts allow exactly this module to); every other runtime
module sees only the kernel's port.
"""

from __future__ import annotations

from deskpilot.hostclient.backend import HostBackend
from deskpilot.kernel.kernel import Kernel
from deskpilot.runtime.runtime import Runtime, RuntimeConfig
from deskpilot.runtime.snapshots import snapshot_port


def default_kernel() -> Kernel:
    """The kernel over the supervised native host (spawned lazily on the first call)."""
    return Kernel(HostBackend())


def build_runtime(config: RuntimeConfig | None = None, kernel: Kernel | None = None) -> Runtime:
    return Runtime(kernel or default_kernel(), snapshots=snapshot_port(), config=config)
