"""A file-backed keyring backend so subprocess tests can exercise the keyring path."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def _path(self) -> Path:
        return Path(os.environ["TEST_KEYRING_FILE"])

    def _load(self) -> dict[str, str]:
        path = self._path()
        return json.loads(path.read_text()) if path.exists() else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}/{username}"] = password
        self._path().write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        data.pop(f"{service}/{username}", None)
        self._path().write_text(json.dumps(data))
