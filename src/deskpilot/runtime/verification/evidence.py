"""What the engine looks at (:class:`Evidence`) and what it answers (:class:`Verdict`).

A check's own answer is an :class:`Outcome`: three-valued (``True`` passed, ``False`` failed,
``None`` undecidable) with a small JSON-safe record of what was looked at. Evidence records
never hold screenshots, file contents or typed secrets; element lines and excerpts are cut to
:data:`EXCERPT_CHARS` so a verdict row stays small in the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.verification import VerificationReason
from deskpilot.protocol.wire import WindowInfo

EXCERPT_CHARS: Final = 160
#: at most this many element lines (or processes, windows) are listed in one evidence record
LISTED: Final = 5


@dataclass(frozen=True)
class Evidence:
    """The state a set of specs is checked against."""

    #: the target window's observation (tree + png + windows), None when none could be taken
    state: ObservedState | None
    #: the desktop's top-level windows then (``state.windows`` when the state carried them)
    windows: Sequence[WindowInfo] | None
    #: when the task started, epoch seconds (``file`` ``modified_after_start``)
    task_started_at: float
    #: the decision model said ``ready_for_verification``
    model_ready: bool = False

    def desktop_windows(self) -> list[WindowInfo] | None:
        """The windows list: the explicit one, else the one the state carried, else None."""
        if self.windows is not None:
            return list(self.windows)
        if self.state is not None and self.state.windows is not None:
            return list(self.state.windows)
        return None


@dataclass(frozen=True)
class Verdict:
    """One spec's verdict; ``passed`` None means undecidable (``unsupported_evidence``)."""

    spec: dict[str, Any]
    passed: bool | None
    reason: VerificationReason
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "passed": self.passed,
            "reason": self.reason.value,
            "evidence": self.evidence,
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """A checker's answer before the engine turns it into a :class:`Verdict`."""

    passed: bool | None
    evidence: dict[str, Any]

    @property
    def reason(self) -> VerificationReason:
        if self.passed is None:
            return VerificationReason.UNSUPPORTED_EVIDENCE
        if self.passed:
            return VerificationReason.ASSERTION_PASSED
        return VerificationReason.ASSERTION_FAILED


def passed(ok: bool, **evidence: Any) -> Outcome:
    return Outcome(ok, evidence)


def undecidable(why: str, **evidence: Any) -> Outcome:
    """Not enough evidence to answer either way; ``why`` says what is missing."""
    return Outcome(None, {"undecidable": why, **evidence})


def clip(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
