"""Profiles and the bounds every runtime number must stay inside.

One table holds defaults, bounds and environment names so the documentation, the resolver and
the validation cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

ENV_PREFIX = "DESKPILOT_PROVIDER_"
PROFILES = ("reliability", "balanced", "low-latency")
DEFAULT_PROFILE = "reliability"


@dataclass(frozen=True, slots=True)
class Knob:
    field: str
    env: str
    low: int
    high: int
    defaults: tuple[int, int, int]  # reliability, balanced, low-latency
    legacy: tuple[str, ...] = ()

    def default_for(self, profile: str) -> int:
        return self.defaults[PROFILES.index(profile)]


KNOBS: tuple[Knob, ...] = (
    Knob("max_tools", "MAX_TOOLS", 1, 128, (16, 12, 8)),
    Knob("max_tool_result_chars", "MAX_TOOL_RESULT_CHARS", 500, 1_000_000, (20_000, 16_000, 8_000)),
    Knob(
        "max_tool_history_chars",
        "MAX_TOOL_HISTORY_CHARS",
        500,
        4_000_000,
        (60_000, 48_000, 24_000),
    ),
    Knob("max_output_tokens", "MAX_OUTPUT_TOKENS", 1, 131_072, (8192, 4096, 2048)),
    Knob(
        "max_response_bytes",
        "MAX_RESPONSE_BYTES",
        1024,
        64 * 1024 * 1024,
        (4_194_304, 4_194_304, 2_097_152),
    ),
    Knob("request_attempts", "REQUEST_ATTEMPTS", 1, 8, (3, 2, 1)),
    Knob(
        "per_attempt_timeout_ms",
        "PER_ATTEMPT_TIMEOUT_MS",
        100,
        600_000,
        (60_000, 45_000, 30_000),
        legacy=("TIMEOUT_MS",),
    ),
    Knob("total_deadline_ms", "TOTAL_DEADLINE_MS", 100, 1_800_000, (180_000, 90_000, 30_000)),
    Knob("retry_delay_ms", "RETRY_DELAY_MS", 0, 60_000, (1000, 500, 250)),
    Knob("retry_max_delay_ms", "RETRY_MAX_DELAY_MS", 0, 120_000, (8000, 4000, 1000)),
    Knob("retry_jitter_ms", "RETRY_JITTER_MS", 0, 10_000, (250, 150, 50)),
    Knob("retry_after_max_ms", "RETRY_AFTER_MAX_MS", 0, 300_000, (30_000, 10_000, 2000)),
    Knob(
        "max_empty_recoveries",
        "MAX_EMPTY_RECOVERIES",
        0,
        8,
        (2, 1, 1),
        legacy=("MAX_EMPTY_RETRIES",),
    ),
    Knob("max_format_recoveries", "MAX_FORMAT_RECOVERIES", 0, 8, (1, 1, 1)),
    Knob("max_final_recoveries", "MAX_FINAL_RECOVERIES", 0, 8, (1, 1, 0)),
    Knob("max_repeated_call_recoveries", "MAX_REPEATED_CALL_RECOVERIES", 0, 8, (1, 1, 1)),
    Knob(
        "max_repair_recoveries_total",
        "MAX_REPAIR_RECOVERIES_TOTAL",
        0,
        16,
        (2, 2, 1),
        legacy=("MAX_REPAIR_RETRIES",),
    ),
    Knob("max_total_recoveries", "MAX_TOTAL_RECOVERIES", 0, 16, (3, 2, 2)),
)

KNOB_BY_FIELD = {k.field: k for k in KNOBS}
