"""LibreOffice Calc for the tests: a fixture spreadsheet with known content, and soffice on it.

The fixture is written directly as an OpenDocument spreadsheet (a zip of a few XML files),
which takes milliseconds where ``soffice --headless --convert-to`` takes ~13 s with a fresh
profile: A1:D6 is a small price list whose D column and row 6 are formulas, their values
stored as Calc stores them (an ODF file not written by LibreOffice is not recalculated on
load by default, so the stored values are what it shows).

soffice starts once per test module (module-scoped fixtures in the test files), with its own
profile under the module's temporary directory and the GTK 3 bridge, as
tests/libreoffice_kit.py starts it; what is added here is the pid of the process that owns
the window (``soffice`` is a script: the process on the accessibility bus is its child).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from xml.sax.saxutils import escape

from deskpilot.desktop import apps
from deskpilot.host.atspi import AtspiClient
from libreoffice_kit import libreoffice

#: the fixture's cells, row by row: text, a number, or a formula with its stored value
Cell = str | float | tuple[str, float]
ROWS: Final[tuple[tuple[Cell, ...], ...]] = (
    ("Item", "Qty", "Price", "Total"),
    ("Apple", 3.0, 0.5, ("of:=[.B2]*[.C2]", 1.5)),
    ("Pear", 2.0, 0.75, ("of:=[.B3]*[.C3]", 1.5)),
    ("Plum", 10.0, 0.2, ("of:=[.B4]*[.C4]", 2.0)),
    ("Fig", 4.0, 1.25, ("of:=[.B5]*[.C5]", 5.0)),
    ("Sum", ("of:=SUM([.B2:.B5])", 19.0), "", ("of:=SUM([.D2:.D5])", 10.0)),
)
#: what the tree shows of each filled cell: address → shown value
SHOWN: Final[dict[str, str]] = {
    "A1": "Item", "B1": "Qty", "C1": "Price", "D1": "Total",
    "A2": "Apple", "B2": "3", "C2": "0.5", "D2": "1.5",
    "A3": "Pear", "B3": "2", "C3": "0.75", "D3": "1.5",
    "A4": "Plum", "B4": "10", "C4": "0.2", "D4": "2",
    "A5": "Fig", "B5": "4", "C5": "1.25", "D5": "5",
    "A6": "Sum", "B6": "19", "D6": "10",
}  # fmt: skip

_NS: Final = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2" office:version="1.3"'
)
_MANIFEST: Final = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"'
    ' manifest:version="1.3">'
    '<manifest:file-entry manifest:full-path="/" manifest:version="1.3"'
    ' manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
    '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
    "</manifest:manifest>"
)


def _cell(value: Cell) -> str:
    if isinstance(value, tuple):
        formula, result = value
        return (
            f'<table:table-cell table:formula="{escape(formula)}" office:value-type="float" '
            f'office:value="{result:g}"><text:p>{result:g}</text:p></table:table-cell>'
        )
    if isinstance(value, float):
        return (
            f'<table:table-cell office:value-type="float" office:value="{value:g}">'
            f"<text:p>{value:g}</text:p></table:table-cell>"
        )
    if not value:
        return "<table:table-cell/>"
    return (
        f'<table:table-cell office:value-type="string"><text:p>{escape(value)}</text:p>'
        "</table:table-cell>"
    )


def write_fixture(path: Path, sheet: str = "Prices") -> Path:
    """The fixture spreadsheet at ``path`` (an .ods)."""
    rows = "".join(
        "<table:table-row>" + "".join(_cell(v) for v in row) + "</table:table-row>" for row in ROWS
    )
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_NS}>'
        "<office:body><office:spreadsheet>"
        f'<table:table table:name="{escape(sheet)}">'
        '<table:table-column table:number-columns-repeated="4"/>'
        f"{rows}</table:table></office:spreadsheet></office:body></office:document-content>"
    )
    with zipfile.ZipFile(path, "w") as z:
        # the mimetype entry first and stored, as ODF wants
        z.writestr(
            zipfile.ZipInfo("mimetype"),
            "application/vnd.oasis.opendocument.spreadsheet",
            compress_type=zipfile.ZIP_STORED,
        )
        z.writestr("META-INF/manifest.xml", _MANIFEST, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
    return path


def soffice() -> str | None:
    """The soffice executable, or None where LibreOffice is not installed."""
    return shutil.which("soffice")


@dataclass(frozen=True)
class Calc:
    """A running Calc: ``app`` is the launched process (its process group is stopped at the
    end), ``pid`` the soffice.bin process that owns the window and the accessible tree (the
    ``soffice`` script starts it as a child, and again after a new profile's first start)."""

    app: apps.App
    pid: int


@contextlib.contextmanager
def calc(document: Path, profile: Path) -> Iterator[Calc]:
    """LibreOffice Calc (GTK 3) showing ``document``, with its own ``profile`` directory,
    once its window is on the accessibility bus (tests/libreoffice_kit.py starts it); stopped
    (by its process group) at the end."""
    with libreoffice(document, profile) as app:
        pid = _soffice_bin(os.getsid(app.proc.pid))
        assert pid is not None, "no soffice.bin in LibreOffice's process group"
        asyncio.run(_loaded(document.name))
        yield Calc(app, pid)


async def _loaded(file_name: str, timeout: float = 60) -> None:
    """Until the sheet has its current cell: Calc's window is on the bus before the document
    finished loading, and a first look then found no cell focused (tests/FLAKES.md)."""
    deadline = time.monotonic() + timeout
    async with await AtspiClient.connect() as client:
        while True:
            frames = [f for f in await client.frames() if file_name in f.title]
            if frames and "current cell" in (await client.snapshot(frames[0].ref)).text:
                return
            assert time.monotonic() < deadline, f"Calc never showed a current cell: {file_name}"
            await asyncio.sleep(0.3)


def _soffice_bin(session: int) -> int | None:
    """The soffice.bin process of this session (the one with the highest pid: the newest)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "soffice.bin":
                continue
            if os.getsid(int(entry.name)) == session:
                found.append(int(entry.name))
        except (OSError, ProcessLookupError):
            continue
    return max(found) if found else None


def cell_formula(document: Path, address: str) -> tuple[str, str] | None:
    """A saved spreadsheet's cell: its formula (``of:=…``, "" without one) and its stored
    value ("" without one), read from the file's content.xml (the first sheet; repeated
    rows and columns counted as Calc writes them); None when the file has no such cell."""
    col = ord(address[0]) - ord("A")
    row = int(address[1:]) - 1
    with zipfile.ZipFile(document) as z:
        content = z.read("content.xml").decode()
    table = re.search(r"<table:table [^>]*>(.*?)</table:table>", content, re.S)
    if table is None:
        return None
    rows: list[str] = []
    for m in re.finditer(
        r"<table:table-row([^>]*?)(?:/>|>(.*?)</table:table-row>)", table.group(1), re.S
    ):
        rows += [m.group(2) or ""] * _repeated(m.group(1), "rows")
    if row >= len(rows):
        return None
    cells: list[str] = []
    for m in re.finditer(
        r"<table:table-cell([^>]*?)(?:/>|>.*?</table:table-cell>)", rows[row], re.S
    ):
        cells += [m.group(1)] * _repeated(m.group(1), "columns")
    if col >= len(cells):
        return None
    attrs = cells[col]
    formula = re.search(r'table:formula="([^"]*)"', attrs)
    value = re.search(r'office:value="([^"]*)"', attrs)
    return (formula.group(1) if formula else "", value.group(1) if value else "")


def _repeated(attrs: str, what: str) -> int:
    m = re.search(rf'table:number-{what}-repeated="(\d+)"', attrs)
    return min(int(m.group(1)), 1024) if m else 1
