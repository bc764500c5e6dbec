"""Which file a save writes (host/save_effects.py): named by the window's title, found on the
app's command line or among the files it holds open — with real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deskpilot.host.save_effects import started_with

#: holds the file named by $DOC open until stdin closes: the path is on no command line
HOLDER = (
    "import os, sys; f = open(os.environ['DOC'], 'rb'); print('ready', flush=True); "
    "sys.stdin.read()"
)


def test_a_file_the_app_holds_open_is_found_by_the_title(tmp_path: Path) -> None:
    """LibreOffice keeps its documents open; a Writer document opened in the process that
    Calc was started by is on no command line (a trial's Writer saves were never checked)."""
    doc = tmp_path / "notes.odt"
    doc.write_bytes(b"PK")
    other = tmp_path / "other" / "notes.odt.bak"
    other.parent.mkdir()
    other.write_bytes(b"")
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        env={**os.environ, "DOC": str(doc)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert started_with(proc.pid, "notes.odt - LibreOffice Writer") == doc
        assert started_with(proc.pid, "• notes.odt (~/work) - Text Editor") == doc
        # a file by another name, or no file at all: nothing (never a guess)
        assert started_with(proc.pid, "report.odt - LibreOffice Writer") is None
        assert started_with(proc.pid, "Untitled 1 - LibreOffice Writer") is None
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)


def test_a_command_line_argument_is_found_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "todo.txt").write_text("x\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; print('ready', flush=True); sys.stdin.read()",
            "todo.txt",
        ],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        # its command line is its own once it runs (read before, a CI run saw none of it)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert started_with(proc.pid, "todo.txt - Text Editor") == tmp_path / "todo.txt"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
