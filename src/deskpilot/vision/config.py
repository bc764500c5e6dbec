"""The multimodal endpoint's settings, kept apart from the decision model's.

A vision model is optional: with none configured, ``vision_read`` answers from the local OCR
engine (docs/vision.md). It is configured when both ``DESKPILOT_VISION_BASE_URL`` and
``DESKPILOT_VISION_MODEL`` are set; ``DESKPILOT_VISION_API_KEY`` and
``DESKPILOT_VISION_TIMEOUT_S`` are optional. The key is held out of ``repr`` and never put in
a message, so an error or a log line cannot carry it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from deskpilot.protocol.errors import DeskpilotError, ErrorCode

ENV_BASE_URL = "DESKPILOT_VISION_BASE_URL"
ENV_MODEL = "DESKPILOT_VISION_MODEL"
ENV_API_KEY = "DESKPILOT_VISION_API_KEY"
ENV_TIMEOUT_S = "DESKPILOT_VISION_TIMEOUT_S"

#: One request (one attempt) to the endpoint; a vision answer takes seconds, not minutes.
DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class VisionConfig:
    """Where the multimodal model lives. ``api_key`` is excluded from ``repr``."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _invalid(f"{ENV_BASE_URL} must be an http(s) URL")
        if not self.model.strip():
            raise _invalid(f"{ENV_MODEL} must not be empty")
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            raise _invalid(f"{ENV_TIMEOUT_S} must be more than 0 and at most {MAX_TIMEOUT_S:g}")

    @property
    def chat_completions_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> VisionConfig | None:
        """The configured endpoint, or ``None`` when base URL or model is unset (then the OCR
        engine answers). A set but malformed value is a typed error, not a silent ``None``."""
        source = os.environ if env is None else env
        base_url = source.get(ENV_BASE_URL, "").strip()
        model = source.get(ENV_MODEL, "").strip()
        if not base_url or not model:
            return None
        api_key = source.get(ENV_API_KEY, "").strip() or None
        raw_timeout = source.get(ENV_TIMEOUT_S, "").strip()
        timeout_s = DEFAULT_TIMEOUT_S
        if raw_timeout:
            try:
                timeout_s = float(raw_timeout)
            except ValueError:
                raise _invalid(f"{ENV_TIMEOUT_S} must be a number of seconds") from None
        return cls(base_url=base_url, model=model, api_key=api_key, timeout_s=timeout_s)


def _invalid(message: str) -> DeskpilotError:
    return DeskpilotError(
        ErrorCode.VISION_UNAVAILABLE,
        f"the vision endpoint is misconfigured: {message}",
        retryable=False,
        details={"cause": "config"},
    )
