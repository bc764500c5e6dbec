"""``read``: a text file for the model, bounded, from the working directory or below ``/``.

Reading changes nothing, so it is not a kernel action; but it is still untrusted input (the
provider marks it so) and it is bounded: at most ``MAX_FILE_BYTES`` are read and at most
``MAX_LINES`` lines / ``MAX_CHARS`` characters are returned, with a line that says where the
file continues (``offset``) — nothing is cut silently. A binary file, an image (use
``vision_read``), a directory, a missing file, and the places where keys live (deskpilot's own
key files, ``~/.ssh``, ``~/.gnupg``, keyrings, ``/etc/shadow``) are refused with a clear reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deskpilot.agent.tools import READ, ToolResult, TurnScope
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.provider import ToolSpec as ModelTool
from deskpilot.provider.config.files import config_dir
from deskpilot.store.paths import data_dir

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_LINES = 2000
MAX_CHARS = 48_000
IMAGE_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff", ".heic", ".svg"}
)
_SECRET_DIRS = (".ssh", ".gnupg", ".aws", ".password-store", ".local/share/keyrings")
_SECRET_FILES = (".netrc", ".pgpass", ".git-credentials")
_SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers")


def _refuse(message: str, reason: str) -> DeskpilotError:
    return DeskpilotError(ErrorCode.INVALID_REQUEST, message, details={"reason": reason})


def _secret_place(path: Path) -> bool:
    home = Path.home()
    text = str(path)
    if text in _SYSTEM_SECRETS:
        return True
    roots = [home / d for d in _SECRET_DIRS] + [p.resolve() for p in deskpilot_places()]
    if any(path == r or r in path.parents for r in roots):
        return True
    return any(path == home / f for f in _SECRET_FILES)


def deskpilot_places() -> list[Path]:
    """Where deskpilot keeps its own keys and records: the data directory (the vault key, the
    database, and the provider's key file when ``DESKPILOT_DATA_DIR`` is set) and the
    provider's configuration directory — from the same functions that write there."""
    home = Path.home()
    return [
        data_dir(),
        config_dir(),
        Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "deskpilot",
        Path(os.environ.get("XDG_DATA_HOME") or home / ".local/share") / "deskpilot",
    ]


def resolve(path_text: str, cwd: Path) -> Path:
    if not path_text.strip():
        raise _refuse("path is empty", "empty_path")
    path = Path(os.path.expanduser(path_text))
    return (path if path.is_absolute() else cwd / path).resolve()


class ReadTool:
    kind = READ
    spec = ModelTool(
        "read",
        "Read a text file (relative to the working directory, or absolute). Returns numbered "
        f"lines, at most {MAX_LINES} per call; offset (1-based line) and limit page through "
        "longer files. For an image use vision_read.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LINES},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    )

    async def run(self, arguments: Mapping[str, Any], scope: TurnScope) -> ToolResult:
        path = resolve(str(arguments["path"]), scope.cwd)
        offset = int(arguments.get("offset") or 1)
        limit = int(arguments.get("limit") or MAX_LINES)
        text = read_text(path)
        lines = text.splitlines()
        chosen = lines[offset - 1 : offset - 1 + limit]
        out: list[str] = []
        used = 0
        last = offset - 1
        for number, line in enumerate(chosen, start=offset):
            row = f"{number:>6}\t{line}"
            if used + len(row) + 1 > MAX_CHARS and out:
                break
            out.append(row)
            used += len(row) + 1
            last = number
        header = f"{path} ({len(lines)} lines)"
        if not lines:
            return ToolResult(f"{header}\n(empty file)", kind=READ)
        if offset > len(lines):
            raise _refuse(f"offset {offset} is past the end ({len(lines)} lines)", "offset")
        body = "\n".join(out)
        if last < len(lines):
            more = len(lines) - last
            body += f"\n[file continues: {more} more lines; read with offset={last + 1}]"
        return ToolResult(f"{header}\n{body}", kind=READ)


def check_not_secret(path: Path) -> None:
    """Refuse the places keys live, for every tool that reads a file (read, vision_read)."""
    if _secret_place(path):
        raise _refuse(f"{path} is where keys or credentials are kept; not read", "secret_place")


def read_text(path: Path) -> str:
    check_not_secret(path)
    if path.suffix.lower() in IMAGE_SUFFIXES:
        raise _refuse(f"{path} is an image: use vision_read with its path", "image_file")
    try:
        if path.is_dir():
            raise _refuse(f"{path} is a directory: use bash ls to list it", "directory")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _refuse(
                f"{path} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit of read",
                "too_large",
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise _refuse(f"no such file: {path}", "not_found") from None
    except PermissionError:
        raise _refuse(f"permission denied: {path}", "permission") from None
    except OSError as exc:
        raise _refuse(f"{path} could not be read ({exc.strerror})", "os_error") from None
    if b"\x00" in data[:8192]:
        raise _refuse(f"{path} is a binary file; read shows text only", "binary")
    return data.decode("utf-8", errors="replace")
