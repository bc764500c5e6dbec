"""Where the API key lives: the environment, the OS keyring, or a 0600 key file.

The key is never printed, logged or accepted as a command-line flag.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from deskpilot.provider.config.files import KEY_FILE_NAME, config_dir
from deskpilot.provider.contract import ProviderError

KEY_ENV = ("DESKPILOT_PROVIDER_API_KEY", "DESKPILOT_API_KEY")
KEYRING_SERVICE = "deskpilot-provider"
KEYRING_USER = "api-key"
STORAGE_ENV = "DESKPILOT_PROVIDER_KEY_STORAGE"  # auto | keyring | file


def key_from_env(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    values = [(n, env[n].strip()) for n in KEY_ENV if env.get(n, "").strip()]
    if len({v for _, v in values}) > 1:
        raise ProviderError(
            "configuration_invalid",
            "conflicting API keys in " + " and ".join(n for n, _ in values),
        )
    return (values[0][1], f"env:{values[0][0]}") if values else (None, None)


def keyring_usable() -> bool:
    """A backend with priority > 0 that is not the fail/null backend."""
    try:
        import keyring
        from keyring.backends import fail, null

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring | null.Keyring):
            return False
        return float(getattr(backend, "priority", 0)) > 0
    except Exception:
        return False


def choose_storage(env: Mapping[str, str]) -> str:
    wanted = env.get(STORAGE_ENV, "auto").strip().lower() or "auto"
    if wanted not in ("auto", "keyring", "file"):
        raise ProviderError("configuration_invalid", f"{STORAGE_ENV} must be auto, keyring or file")
    if wanted == "file":
        return "file"
    if keyring_usable():
        return "keyring"
    if wanted == "keyring":
        raise ProviderError("configuration_invalid", "no usable keyring backend on this system")
    return "file"


def key_file(env: Mapping[str, str]) -> Path:
    return config_dir(env) / KEY_FILE_NAME


def store_key(key: str, storage: str, env: Mapping[str, str]) -> str:
    """Store the key; returns where it went (``keyring`` or the file path)."""
    if storage == "keyring":
        import keyring

        keyring.set_password(KEYRING_SERVICE, KEYRING_USER, key)
        return "keyring"
    path = key_file(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(key + "\n")
    os.chmod(path, 0o600)
    return str(path)


def load_stored_key(storage: str | None, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    if storage == "keyring":
        try:
            import keyring

            value = keyring.get_password(KEYRING_SERVICE, KEYRING_USER)
        except Exception:
            value = None
        return (value, "keyring") if value else (None, None)
    path = key_file(env)
    try:
        value = path.read_text("utf-8").strip()
    except FileNotFoundError:
        return None, None
    if path.stat().st_mode & 0o077:
        raise ProviderError(
            "configuration_invalid",
            f"{path} is readable by others; chmod 600 it",
            detail={"path": str(path)},
        )
    return (value, "file") if value else (None, None)
