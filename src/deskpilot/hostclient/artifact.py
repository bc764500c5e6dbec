"""Is the host we are about to run the one that was installed?

A signed native host has its code signature checked before it is spawned. A Python install has
no signature, but a wheel install has the next best thing: the distribution's RECORD, which
lists a sha256 and a size for every installed file. Before each spawn the client checks every
module the host process will execute (the ``deskpilot`` package's ``__init__``,
``deskpilot/host/**`` and ``deskpilot/protocol/**``) against RECORD: present, a regular file and
not a symlink, not group- or world-writable, within size limits, size and hash as recorded; and
no file in those trees that RECORD does not list. The distribution's version must be at least
0.1.0. Anything else is ``native_host_untrusted`` and nothing is spawned.

An editable (development) install has no RECORD entries for its sources, so it cannot be
verified. It is run only when ``DESKPILOT_HOST_LOCAL_TRUST=1`` is set by whoever starts the
client (the test suite and ``scripts/`` do); a regular install refuses that override, as local trust
is refused for a signed app. What this protects, and what it does not, is
written down in docs/security.md.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import json
import os
import re
import site
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Literal

from deskpilot.hostclient.config import LOCAL_TRUST_ENV
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

DIST_NAME = "deskpilot"
MIN_VERSION = (0, 1, 0)
MAX_RECORD_BYTES = 1024 * 1024
MAX_MODULE_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
# The trees the host process executes. The package root's __init__ runs on every import.
HOST_FILES = ("deskpilot/__init__.py",)
HOST_TREES = ("deskpilot/host/", "deskpilot/protocol/")
#: the whole package: what a remote eval task runs (its setup's launch policy, the
#: verification engine, the private desktop) besides the host (hostclient/remote_host.py)
PACKAGE_TREES = ("deskpilot/",)
REQUIRED = ("deskpilot/host/__main__.py", "deskpilot/protocol/__init__.py")

#: remote: checked by the remote machine itself (hostclient/remote_host.py)
TrustMode = Literal["verified", "development", "remote"]


@dataclass(frozen=True, slots=True)
class ArtifactReport:
    mode: TrustMode
    version: str
    location: str
    files_checked: int = 0
    bytes_checked: int = 0
    local_trust: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "version": self.version,
            "location": self.location,
            "filesChecked": self.files_checked,
            "bytesChecked": self.bytes_checked,
            "localTrust": self.local_trust,
            "notes": list(self.notes),
        }


def untrusted(message: str, **details: object) -> DeskpilotError:
    return DeskpilotError(
        ErrorCode.NATIVE_HOST_UNTRUSTED, message, retryable=False, details=dict(details)
    )


def host_search_path() -> list[str]:
    """Where ``python -I -m deskpilot.host`` looks: the interpreter's site-packages."""
    paths: list[str] = []
    with contextlib.suppress(AttributeError):  # a site module without it
        paths.extend(site.getsitepackages())
    return [p for p in paths if os.path.isdir(p)] or list(sys.path)


def find_distribution(paths: Iterable[str] | None = None) -> metadata.Distribution:
    found = list(metadata.distributions(name=DIST_NAME, path=list(paths or host_search_path())))
    if not found:
        raise DeskpilotError(
            ErrorCode.NATIVE_HOST_MISSING,
            "deskpilot is not installed in this interpreter's site-packages, so there is no "
            "host to verify or run",
            retryable=False,
        )
    return found[0]


def is_editable(dist: metadata.Distribution) -> bool:
    """PEP 610: an editable install says so in direct_url.json."""
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    dir_info = data.get("dir_info") if isinstance(data, dict) else None
    return isinstance(dir_info, dict) and dir_info.get("editable") is True


_VERSION = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$")


def version_at_least(version: str, minimum: tuple[int, int, int] = MIN_VERSION) -> bool:
    m = _VERSION.match(version)
    if not m:
        return False
    release = tuple(int(g or 0) for g in m.group(1, 2, 3))
    rest = m.group(4).lower()
    pre = bool(re.match(r"^[.-]?(a|b|c|rc|alpha|beta|pre|preview|dev)", rest))
    if release != minimum:
        return release > minimum
    return not pre


def local_trust_requested(env: Mapping[str, str]) -> bool:
    return env.get(LOCAL_TRUST_ENV) == "1"


def verify_host_artifact(
    env: Mapping[str, str] | None = None, trees: tuple[str, ...] = HOST_TREES
) -> ArtifactReport:
    """Check the installed host (the modules under ``trees``) before spawning it; raises
    native_host_untrusted/missing."""
    env = os.environ if env is None else env
    dist = find_distribution()
    version = dist.version or ""
    location = str(dist.locate_file(""))
    if not version_at_least(version):
        raise untrusted(
            f"the installed deskpilot {version!r} is older than the minimum 0.1.0",
            version=version,
        )
    local_trust = local_trust_requested(env)
    if is_editable(dist):
        if not local_trust:
            raise untrusted(
                "this is an editable (development) install: its RECORD does not list the "
                f"host's sources, so they cannot be verified; set {LOCAL_TRUST_ENV}=1 to run "
                "the host from the working tree",
                reason="development_install",
            )
        return ArtifactReport(
            mode="development",
            version=version,
            location=location,
            local_trust=True,
            notes=("editable install: host files not verified (local trust)",),
        )
    if local_trust:
        raise untrusted(
            f"{LOCAL_TRUST_ENV}=1 is refused for a regular install: only a development "
            "(editable) install may skip verification",
            reason="local_trust_refused",
        )
    files, total = _verify_record(dist, trees)
    return ArtifactReport(
        mode="verified",
        version=version,
        location=location,
        files_checked=files,
        bytes_checked=total,
    )


def _record_rows(dist: metadata.Distribution) -> list[tuple[str, str, str]]:
    record_path = Path(str(dist.locate_file(""))) / f"{_dist_info_dir(dist)}" / "RECORD"
    _check_file(record_path, MAX_RECORD_BYTES, "RECORD")
    text = record_path.read_text(encoding="utf-8")
    rows: list[tuple[str, str, str]] = []
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        path = row[0]
        digest = row[1] if len(row) > 1 else ""
        size = row[2] if len(row) > 2 else ""
        rows.append((path, digest, size))
    return rows


def _dist_info_dir(dist: metadata.Distribution) -> str:
    # PathDistribution keeps its metadata directory in ``_path``; derive it from a known file
    # instead of relying on the private attribute.
    for f in dist.files or ():
        parts = f.parts
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "RECORD":
            return parts[0]
    raise untrusted("the installed distribution has no RECORD", reason="no_record")


def _is_host_path(path: str, trees: tuple[str, ...] = HOST_TREES) -> bool:
    return path in HOST_FILES or any(path.startswith(t) for t in trees)


def _check_file(path: Path, limit: int, label: str) -> os.stat_result:
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise untrusted(f"{label} is missing: {path}", path=str(path)) from None
    if stat.S_ISLNK(st.st_mode):
        raise untrusted(f"{label} is a symlink: {path}", path=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise untrusted(f"{label} is not a regular file: {path}", path=str(path))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise untrusted(f"{label} is group- or world-writable: {path}", path=str(path))
    if st.st_size > limit:
        raise untrusted(f"{label} exceeds {limit} bytes: {path}", path=str(path))
    return st


def _check_dir(path: Path) -> None:
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise untrusted(f"not a plain directory: {path}", path=str(path))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise untrusted(f"directory is group- or world-writable: {path}", path=str(path))


def _sha256_b64(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()


def _verify_record(
    dist: metadata.Distribution, trees: tuple[str, ...] = HOST_TREES
) -> tuple[int, int]:
    root = Path(str(dist.locate_file(""))).resolve()
    listed: dict[str, tuple[str, str]] = {}
    for path, digest, size in _record_rows(dist):
        norm = path.replace("\\", "/")
        if _is_host_path(norm, trees) and "/__pycache__/" not in norm:
            listed[norm] = (digest, size)
    for required in REQUIRED:
        if required not in listed:
            raise untrusted(
                f"RECORD does not list {required}: the installed host is incomplete",
                path=required,
            )
    total = 0
    for rel, (digest, size) in sorted(listed.items()):
        full = root / rel
        if ".." in Path(rel).parts:
            raise untrusted(f"RECORD entry escapes the install: {rel}", path=rel)
        st = _check_file(full, MAX_MODULE_BYTES, "host module")
        algo, _, value = digest.partition("=")
        if algo != "sha256" or not value:
            raise untrusted(f"RECORD has no sha256 for {rel}", path=rel)
        if size and int(size) != st.st_size:
            raise untrusted(f"{rel} has changed size since it was installed", path=rel)
        if _sha256_b64(full) != value:
            raise untrusted(f"{rel} does not match its installed sha256", path=rel)
        total += st.st_size
        if total > MAX_TOTAL_BYTES:
            raise untrusted(f"the host's modules exceed {MAX_TOTAL_BYTES} bytes in total")
    # Nothing may sit in the host's trees that RECORD does not vouch for.
    _check_dir(root / "deskpilot")
    for tree in trees:
        base = root / tree
        _check_dir(base)
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            d = Path(dirpath)
            for name in dirnames:
                _check_dir(d / name)
            in_cache = d.name == "__pycache__"
            for name in filenames:
                full = d / name
                rel = full.relative_to(root).as_posix()
                if in_cache:
                    # bytecode is rebuilt from the verified sources when stale; it may not
                    # be writable by anyone else (see docs/security.md)
                    _check_file(full, MAX_MODULE_BYTES, "cached bytecode")
                    continue
                if rel not in listed:
                    raise untrusted(f"{rel} is not part of the installed distribution", path=rel)
    return len(listed), total
