"""Ray for an eval run: started (or joined) in a thread of its own while the driver prepares.

``ray.init`` of the embedded Ray takes 2–7 s on this machine kind (its GCS, raylet and agent
processes start and register), so :class:`RayStart` begins it the moment ``deskpilot eval``
knows its options are valid and its model resolved, and the driver meanwhile imports the
engine and plans the runs. That overlap is small in practice — the CLI has imported most of
the package before ``eval`` runs, so ``engine.waitS`` is close to ``startS``
(docs/benchmarks.md, "The Ray engine") — but it costs nothing. This module imports nothing
heavy itself: Ray is imported in that thread.

The thread lives as long as Ray does and is the one that shuts it down. That is not a
style choice: Ray starts its processes with ``PR_SET_PDEATHSIG``, which the kernel fires
when the *thread* that started them ends — a Ray started in a short-lived thread loses its
GCS the moment the thread returns. :meth:`RayStart.close` asks it to shut Ray down, which
the CLI does after it has shown the results (Ray's shutdown, ≈1.2 s, is off the path to
them).

The embedded Ray: ``address="local"`` (a ``RAY_ADDRESS`` in the environment is not
followed), sized to ``--desktops`` CPUs, node address 127.0.0.1, no dashboard, usage stats
off, the workers' output not copied to the terminal, its session files under
:data:`RAY_TEMP_DIR` (the newest :data:`KEEP_SESSIONS` kept) and its token authentication
reading its token there.
"""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

#: the embedded Ray's session files and logs (never the person's home)
RAY_TEMP_DIR = Path(tempfile.gettempdir()) / f"deskpilot-ray-{os.getuid()}"
#: the embedded Ray's session dirs (logs) kept in :data:`RAY_TEMP_DIR`
KEEP_SESSIONS = 5


class RayStartError(ValueError):
    """Ray is not installed, did not start, or the cluster at ``--ray`` cannot be joined (a
    usage error: the run has not begun)."""


def ray_module() -> Any:
    """Ray, imported when a Ray run starts (≈0.3 s; the thread engine never pays it)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report leaves the machine
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise RayStartError(
            "the Ray engine needs Ray (ray>=2.40,<3, a dependency of deskpilot: reinstall "
            "it), or run with --engine threads"
        ) from None


def start_ray(address: str | None, desktops: int) -> dict[str, Any]:
    """Start the embedded Ray (``address`` None) or join a cluster; what the results header
    says of the engine (kind, address, nodes, how long Ray took to start)."""
    ray = ray_module()
    t0 = time.monotonic()
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR"}
    try:
        if address is None:
            RAY_TEMP_DIR.mkdir(mode=0o700, exist_ok=True)
            _own_token()
            ray.init(
                address="local",
                num_cpus=desktops,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                _temp_dir=str(RAY_TEMP_DIR),
                **quiet,
            )
        else:
            _reachable(address)
            ray.init(address=address, **quiet)
    except RayStartError:
        raise
    except Exception as exc:  # Ray's own: a connection refused, a token it lacks …
        where = "start an embedded Ray" if address is None else f"join the Ray at {address}"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RayStartError(f"could not {where}: {first[:300]}") from None
    return {
        "kind": "ray",
        "address": address or "embedded",
        "nodes": sum(1 for n in ray.nodes() if n.get("Alive")),
        "cpus": int(ray.cluster_resources().get("CPU", 0)),
        "startS": round(time.monotonic() - t0, 3),
    }


def _reachable(address: str, timeout: float = 5.0) -> None:
    """A HOST:PORT that nothing listens on is refused at once (Ray itself would retry for
    minutes). Ray rewrites a loopback HOST to this machine's own address, which the kernel
    routes locally all the same."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in host:
        return  # ray://… and the like: Ray's own
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise RayStartError(f"nothing answers at {address}: {exc}") from None


def _own_token() -> None:
    """The embedded Ray's token authentication (on by default) reads its token from
    :data:`RAY_TEMP_DIR` rather than writing one to ``~/.ray`` (a token of the person's own
    is used as it is)."""
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    path = RAY_TEMP_DIR / "auth_token"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(path)


def prune_sessions(keep: int = KEEP_SESSIONS) -> None:
    """The embedded Ray's newest session dirs are kept (its logs, ~300 KiB each), the older
    ones removed: /tmp does not fill up run after run."""
    sessions = sorted(p for p in RAY_TEMP_DIR.glob("session_2*") if p.is_dir())
    for old in sessions[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


class RayStart:
    """Ray started (or joined) in its own thread: :meth:`engine` waits for it, :meth:`close`
    shuts it down (from that thread; see the module doc)."""

    def __init__(self, address: str | None, desktops: int) -> None:
        self.address = address
        self.desktops = max(1, desktops)
        self.shutdown_s: float | None = None
        self._engine: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._own, name="eval-ray", daemon=True)
        self._thread.start()

    def _own(self) -> None:
        try:
            self._engine = start_ray(self.address, self.desktops)
        except BaseException as exc:  # handed to the driver by engine()
            self._error = exc
            return
        finally:
            self._ready.set()
        self._stop.wait()
        t0 = time.monotonic()
        ray_module().shutdown()
        self.shutdown_s = round(time.monotonic() - t0, 3)
        if self.address is None:
            prune_sessions()

    def engine(self) -> dict[str, Any]:
        """What the results header says of the engine, once Ray is up (``waitS``: how long
        the driver still waited for it after its own preparation); raises
        :class:`RayStartError`."""
        t0 = time.monotonic()
        while not self._ready.wait(0.2):  # a short wait: Ctrl-C gets through
            pass
        if self._error is not None:
            raise self._error
        assert self._engine is not None
        return {**self._engine, "waitS": round(time.monotonic() - t0, 3)}

    def close(self) -> None:
        """Shut Ray down (a cluster is only left: its actors end with this driver) and wait
        for it; idempotent."""
        self._stop.set()
        self._thread.join()
