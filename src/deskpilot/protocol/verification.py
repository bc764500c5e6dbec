"""Verification specs for delegated tasks.

Only kinds that an engine can actually decide are declared: a declared kind that no engine
evaluates (``dom``, ``external_readback``) would make every task using it fail for good.
``file`` is decidable (the runtime reads the file); the other two are not offered at all.
"""

from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import Field

from deskpilot.protocol.wire import WireModel


class AccessibilityAssertion(enum.StrEnum):
    EXISTS = "exists"
    VISIBLE = "visible"
    ENABLED = "enabled"
    FOCUSED = "focused"
    VALUE_EQUALS = "value_equals"
    TEXT_CONTAINS = "text_contains"


class ElementSelector(WireModel):
    role: str | None = None
    name: str | None = None
    name_contains: str | None = None


class AccessibilitySpec(WireModel):
    kind: Literal["accessibility"] = "accessibility"
    selector: ElementSelector
    assertion: AccessibilityAssertion
    expected: str | None = None


class VisualSpec(WireModel):
    kind: Literal["visual"] = "visual"
    assertion: Literal["text_present", "text_absent"]
    text: str = Field(min_length=1)


class ApplicationStateSpec(WireModel):
    kind: Literal["application_state"] = "application_state"
    assertion: Literal["frontmost", "window_exists", "running", "window_title_contains"]
    app: str | None = None
    text: str | None = None
    expected: bool = True


class FileSpec(WireModel):
    kind: Literal["file"] = "file"
    path: str
    assertion: Literal["exists", "contains", "equals"]
    text: str | None = None


VerificationSpec = Annotated[
    AccessibilitySpec | VisualSpec | ApplicationStateSpec | FileSpec,
    Field(discriminator="kind"),
]


class VerificationReason(enum.StrEnum):
    ASSERTION_PASSED = "assertion_passed"
    ASSERTION_FAILED = "assertion_failed"
    UNSUPPORTED_EVIDENCE = "unsupported_evidence"
    MODEL_VISUAL_ASSERTION = "model_visual_assertion"
