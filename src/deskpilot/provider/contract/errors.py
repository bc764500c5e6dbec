"""The one exception type the provider raises, carrying a manifest code."""

from __future__ import annotations

from typing import Any


class ProviderError(Exception):
    """A classified provider failure.

    Every failure the provider reports has a code from ``error_contract.json`` so callers,
    telemetry and the health check classify the same event the same way.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        http_status: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status
        self.detail: dict[str, Any] = dict(detail or {})

    @property
    def category(self) -> str:
        from deskpilot.provider.contract.manifest import load_contract

        return load_contract().spec(self.code).category

    @property
    def retryable(self) -> bool:
        from deskpilot.provider.contract.manifest import load_contract

        return load_contract().spec(self.code).retryable

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "category": self.category,
            "retryable": self.retryable,
            "message": self.message,
        }
        if self.http_status is not None:
            out["httpStatus"] = self.http_status
        if self.detail:
            out["detail"] = self.detail
        return out
