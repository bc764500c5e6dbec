"""Load the error manifest and classify HTTP statuses from it (never from code constants)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

MANIFEST_NAME = "error_contract.json"


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    code: str
    category: str
    retryable: bool
    immediate_retry: bool
    repairable: bool
    description: str


@dataclass(frozen=True, slots=True)
class HttpRange:
    low: int
    high: int
    code: str


class ErrorContract:
    """The parsed manifest. Construction assumes the data passed the validator."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.schema: str = data["schema"]
        self.categories: tuple[str, ...] = tuple(data["allowedCategories"])
        self.codes: dict[str, ErrorSpec] = {
            code: ErrorSpec(
                code=code,
                category=spec["category"],
                retryable=bool(spec["retryable"]),
                immediate_retry=bool(spec["immediateRetry"]),
                repairable=bool(spec.get("repairable", False)),
                description=str(spec.get("description", "")),
            )
            for code, spec in data["codes"].items()
        }
        http = data["http"]
        self.exact: dict[int, str] = {int(k): v for k, v in http["exact"].items()}
        self.ranges: tuple[HttpRange, ...] = tuple(
            HttpRange(int(r["from"]), int(r["to"]), r["code"]) for r in http["ranges"]
        )

    def spec(self, code: str) -> ErrorSpec:
        try:
            return self.codes[code]
        except KeyError:
            raise KeyError(f"error code {code!r} is not in the error contract") from None

    def classify_http(self, status: int) -> str:
        """Exact mappings win over ranges; a status outside every range is ``http_error``."""
        if status in self.exact:
            return self.exact[status]
        for rng in self.ranges:
            if rng.low <= status <= rng.high:
                return rng.code
        return "http_error"


def read_manifest_data() -> dict[str, Any]:
    text = resources.files("deskpilot.provider.contract").joinpath(MANIFEST_NAME).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@lru_cache(maxsize=1)
def load_contract() -> ErrorContract:
    """Load and validate the packaged manifest once; an invalid manifest is a hard error."""
    from deskpilot.provider.contract.validator import validate_manifest

    data = read_manifest_data()
    problems = validate_manifest(data)
    if problems:
        raise RuntimeError("error contract manifest is invalid: " + "; ".join(problems))
    return ErrorContract(data)
