"""Build a real wheel of the project and install it into a throwaway venv, offline.

The project's build backend needs a newer setuptools than the dev venv has and the tests must
not reach the network, so the wheel is assembled here by the book (PEP 427: the package files,
a ``.dist-info`` with METADATA, WHEEL, entry_points.txt and a RECORD of sha256 hashes). pip
then installs it for real, writing the installed RECORD that the client verifies. The venv
reuses the dev venv's third-party packages through a path entry (a plain directory line in a
``.pth`` file, so the dev venv's own editable-install hook is not run).
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
INCLUDE_SUFFIXES = (".py", ".json", ".typed")


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(out_dir: Path, version: str = "0.1.0") -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"deskpilot-{version}-py3-none-any.whl"
    info = f"deskpilot-{version}.dist-info"
    entries: list[tuple[str, bytes]] = []
    for path in sorted((SRC / "deskpilot").rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        if not path.name.endswith(INCLUDE_SUFFIXES):
            continue
        entries.append((path.relative_to(SRC).as_posix(), path.read_bytes()))
    entries.append(
        (
            f"{info}/METADATA",
            (
                f"Metadata-Version: 2.1\nName: deskpilot\nVersion: {version}\n"
                "Requires-Python: >=3.11\n"
            ).encode(),
        )
    )
    entries.append(
        (
            f"{info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: deskpilot-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n",
        )
    )
    entries.append(
        (f"{info}/entry_points.txt", b"[console_scripts]\ndeskpilot = deskpilot.cli.main:app\n")
    )
    record = "".join(f"{name},{_hash(data)},{len(data)}\n" for name, data in entries)
    record += f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
        zf.writestr(f"{info}/RECORD", record)
    return wheel


def make_venv(root: Path, wheel: Path) -> Path:
    """A venv with the wheel installed by pip (no deps, no index); returns its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    python = root / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    dev_site = sysconfig.get_paths()["purelib"]
    (site / "zz-deskpilot-dev-deps.pth").write_text(dev_site + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    return python


def installed_file(python: Path, relative: str) -> Path:
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Path(site) / relative
