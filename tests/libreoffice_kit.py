"""LibreOffice for tests: documents of known content made by LibreOffice itself, and the app
started on one with its GTK 3 plugin (what Debian's ``libreoffice-gtk3`` gives a desktop).

Every run has its own user profile (``-env:UserInstallation``) under the test's temporary
directory, so it never joins another LibreOffice on the machine, nor keeps state between
runs. ``soffice`` is a script that starts ``soffice.bin``: the process on the accessibility
bus is not the one started, so it is waited for by name.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from deskpilot.desktop import apps
from deskpilot.host.atspi import AtspiClient, FrameInfo

HAS_WRITER = bool(shutil.which("soffice")) and Path("/usr/lib/libreoffice/program/swriter").exists()
needs_writer = pytest.mark.skipif(not HAS_WRITER, reason="libreoffice-writer is not installed")


def make_document(folder: Path, name: str, paragraphs: list[str], fmt: str = "odt") -> Path:
    """``folder/name.fmt`` with one paragraph per item (LibreOffice converts a text file:
    each line becomes a paragraph)."""
    source = folder / f"{name}.txt"
    source.write_text("\n".join(paragraphs) + "\n")
    profile = (folder / "convert-profile").as_uri()
    subprocess.run(
        [
            "soffice",
            f"-env:UserInstallation={profile}",
            "--headless",
            "--convert-to",
            fmt,
            "--outdir",
            str(folder),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    out = folder / f"{name}.{fmt}"
    assert out.exists(), f"soffice made no {out}"
    return out


@contextmanager
def libreoffice(document: Path, profile: Path) -> Iterator[apps.App]:
    """LibreOffice (GTK 3 plugin) showing ``document``, once its window is on the AT-SPI bus;
    stopped on the way out."""
    env = {**os.environ, "SAL_USE_VCLPLUGIN": "gtk3"}
    argv = [
        "soffice",
        f"-env:UserInstallation={profile.as_uri()}",
        "--norestore",
        "--nologo",
        str(document),
    ]
    app = apps.launch(argv, env)
    try:
        asyncio.run(_window(document.name))
        yield app
    finally:
        app.stop()


async def _window(file_name: str, timeout: float = 90) -> FrameInfo:
    """The frame whose title names the document (LibreOffice starts slowly: a fresh profile
    takes ~10 s on a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout
    async with await AtspiClient.connect() as client:
        while True:
            frames = [f for f in await client.frames() if file_name in f.title]
            if frames:
                return frames[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no LibreOffice window for {file_name}")
            await asyncio.sleep(0.5)
