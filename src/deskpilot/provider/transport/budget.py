"""Per-attempt timeout, total deadline, backoff with jitter and the Retry-After clamp."""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime

from deskpilot.provider.config import RuntimePolicy

# An attempt shorter than this cannot do useful work; the deadline counts as spent.
MIN_ATTEMPT_S = 0.05


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date); None if absent."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class RequestBudget:
    """Owns the clock for one logical request (all its attempts)."""

    def __init__(self, policy: RuntimePolicy, *, rng: random.Random | None = None) -> None:
        self.policy = policy
        self._rng = rng or random.Random()
        self.started = time.monotonic()
        self.deadline = self.started + policy.total_deadline_ms / 1000

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000

    def attempt_timeout(self) -> float:
        return min(self.policy.per_attempt_timeout_ms / 1000, self.remaining())

    def backoff(self, attempt: int) -> float:
        """Exponential from retry_delay, capped at retry_max_delay, plus uniform jitter."""
        base = self.policy.retry_delay_ms * (2 ** max(0, attempt - 1))
        capped = min(base, self.policy.retry_max_delay_ms)
        jitter = (
            self._rng.uniform(0, self.policy.retry_jitter_ms) if self.policy.retry_jitter_ms else 0
        )
        return float(capped + jitter) / 1000

    def clamp_retry_after(self, seconds: float) -> float:
        return min(max(0.0, seconds), self.policy.retry_after_max_ms / 1000)

    def fits(self, delay: float) -> bool:
        return delay + MIN_ATTEMPT_S <= self.remaining()
