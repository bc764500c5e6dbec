"""``file`` specs: exists, contains, equals, sha256, modified_after_start.

Contents are read only up to :data:`READ_CAP` (16 MiB): a larger file makes ``contains`` and
``sha256`` undecidable rather than holding the whole file in memory. ``equals`` compares bytes
(the text as UTF-8) and ignores one trailing newline of the file, which editors add on save;
a size that already differs decides it without reading. ``modified_after_start`` compares the
file's mtime with the task's start. Evidence records path, size, mtime and the digest, never
the contents. The reads block, so they run in a thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from typing import Final

from deskpilot.protocol.verification import FileSpec

from .evidence import Outcome, passed, undecidable

READ_CAP: Final = 16 * 1024 * 1024


def _check(spec: FileSpec, task_started_at: float) -> Outcome:
    path = os.path.expanduser(spec.path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return passed(False, path=path, exists=False)
    except NotADirectoryError:
        return passed(False, path=path, exists=False)
    except OSError as exc:
        return undecidable(f"cannot stat the file: {exc.strerror or type(exc).__name__}", path=path)
    evidence: dict[str, object] = {
        "path": path,
        "exists": True,
        "size": st.st_size,
        "mtime": st.st_mtime,
    }
    if spec.assertion == "exists":
        return passed(True, **evidence)
    if spec.assertion == "modified_after_start":
        evidence["taskStartedAt"] = task_started_at
        return passed(st.st_mtime > task_started_at, **evidence)
    if not stat.S_ISREG(st.st_mode):
        return passed(False, note="not a regular file", **evidence)
    if spec.assertion == "equals":
        want = (spec.text or "").encode("utf-8")
        if st.st_size not in (len(want), len(want) + 1):
            return passed(False, note="the size differs", **evidence)
    if st.st_size > READ_CAP:
        return undecidable(
            f"the file is larger than the {READ_CAP // 2**20} MiB read cap", **evidence
        )
    try:
        with open(path, "rb") as f:
            data = f.read(READ_CAP + 1)
    except OSError as exc:
        return undecidable(
            f"cannot read the file: {exc.strerror or type(exc).__name__}", **evidence
        )
    if len(data) > READ_CAP:
        return undecidable(f"the file grew past the {READ_CAP // 2**20} MiB read cap", **evidence)
    if spec.assertion == "sha256":
        digest = hashlib.sha256(data).hexdigest()
        evidence["sha256"] = digest
        return passed(digest == (spec.expected or "").lower(), **evidence)
    want = (spec.text or "").encode("utf-8")
    if spec.assertion == "contains":
        return passed(want in data, **evidence)
    same = data in (want, want + b"\n")
    return passed(same, **evidence)


async def check_file(spec: FileSpec, task_started_at: float) -> Outcome:
    return await asyncio.to_thread(_check, spec, task_started_at)
