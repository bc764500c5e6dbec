"""The provider config file: where it lives, how it is read, how damaged encodings are repaired.

Editors on other systems save JSON as UTF-16, with a BOM or with leading NULs. Such a file is
repaired only if it then parses: the original is kept as a ``.bak-*-encoding`` copy and the file
is rewritten as UTF-8 without BOM. A file that does not parse is never guessed at.
"""

from __future__ import annotations

import codecs
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskpilot.provider.contract import ProviderError

CONFIG_SCHEMA = "deskpilot.provider.config.v1"
CONFIG_NAME = "provider.json"
KEY_FILE_NAME = "provider.key"
FILE_KEYS = frozenset({"schema", "baseUrl", "model", "profile", "keyStorage", "limits", "debug"})


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$DESKPILOT_DATA_DIR`` when set, else ``$XDG_CONFIG_HOME/deskpilot`` (``~/.config``)."""
    env = os.environ if env is None else env
    if env.get("DESKPILOT_DATA_DIR"):
        return Path(env["DESKPILOT_DATA_DIR"])
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "deskpilot"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / CONFIG_NAME


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str  # utf-8, utf-8-sig, utf-16-le, utf-16-be, utf-8+nul

    @property
    def needs_normalising(self) -> bool:
        return self.encoding != "utf-8"


def decode_config_bytes(raw: bytes) -> Decoded:
    if raw.startswith(codecs.BOM_UTF8):
        return Decoded(raw[len(codecs.BOM_UTF8) :].decode("utf-8"), "utf-8-sig")
    if raw.startswith(codecs.BOM_UTF16_LE):
        return Decoded(raw[2:].decode("utf-16-le"), "utf-16-le")
    if raw.startswith(codecs.BOM_UTF16_BE):
        return Decoded(raw[2:].decode("utf-16-be"), "utf-16-be")
    if len(raw) >= 4 and raw[1] == 0 and raw[3] == 0 and raw[0] != 0:
        return Decoded(raw.decode("utf-16-le"), "utf-16-le")
    if len(raw) >= 4 and raw[0] == 0 and raw[2] == 0 and raw[1] != 0:
        return Decoded(raw.decode("utf-16-be"), "utf-16-be")
    stripped = raw.lstrip(b"\x00")
    if len(stripped) != len(raw):
        inner = decode_config_bytes(stripped)
        return Decoded(inner.text, inner.encoding + "+nul")
    return Decoded(raw.decode("utf-8"), "utf-8")


def _invalid(path: Path, message: str) -> ProviderError:
    return ProviderError("configuration_invalid", f"{path}: {message}", detail={"path": str(path)})


def parse_config_file(path: Path) -> tuple[dict[str, Any], Decoded | None]:
    """Read and check the file; a missing file is an empty config."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    try:
        decoded = decode_config_bytes(raw)
        data = json.loads(decoded.text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _invalid(path, f"malformed JSON ({exc.__class__.__name__}); not repaired") from None
    if not isinstance(data, dict):
        raise _invalid(path, "the config must be a JSON object")
    unknown = set(data) - FILE_KEYS
    if unknown:
        raise _invalid(path, f"unknown keys {sorted(unknown)}")
    for key in ("baseUrl", "model", "profile", "keyStorage"):
        if key in data and not isinstance(data[key], str):
            raise _invalid(path, f"{key} must be a string")
    if "limits" in data and not isinstance(data["limits"], dict):
        raise _invalid(path, "limits must be an object")
    if "debug" in data and not isinstance(data["debug"], bool | str):
        raise _invalid(path, "debug must be a boolean or a path")
    return data, decoded


def normalise_config_file(path: Path) -> Path | None:
    """Rewrite a parseable but oddly encoded file as UTF-8; return the backup path if any."""
    data, decoded = parse_config_file(path)
    if decoded is None or not decoded.needs_normalising:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.bak-{stamp}-{os.getpid()}-encoding")
    backup.write_bytes(path.read_bytes())
    os.chmod(backup, 0o600)
    write_config_file(path, data)
    return backup


def write_config_file(path: Path, data: Mapping[str, Any]) -> None:
    """Atomic write, 0600: the file may name a key storage location."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(dict(data), fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    os.replace(tmp, path)
