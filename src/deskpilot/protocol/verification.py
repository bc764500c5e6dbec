"""Verification specs: how a delegated task (or an atomic action's ``expect``) says "done".

Every kind declared here is decided by ``deskpilot.runtime.verification`` (docs/verification.md
is the long form): a declared kind that no engine evaluates would make every task using it
fail for good, so nothing is offered that the engine cannot answer. Specs are wire models:
camelCase or snake_case on input, unknown fields refused, and a field that does not apply to
the chosen assertion is refused too (a ``text`` on a file ``exists`` is a mistake, not a no-op).
"""

from __future__ import annotations

import enum
import re
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from deskpilot.protocol.wire import WireModel

_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


class AccessibilityAssertion(enum.StrEnum):
    EXISTS = "exists"
    VISIBLE = "visible"
    ENABLED = "enabled"
    FOCUSED = "focused"
    VALUE_EQUALS = "value_equals"
    TEXT_CONTAINS = "text_contains"


class MatchPolicy(enum.StrEnum):
    """Which of the elements the selector matches must satisfy the assertion.

    ``any``: at least one; ``all``: every one (and there is at least one); ``only``: exactly one
    element matches and it satisfies the assertion (duplicates fail). The default is ``any``
    for every assertion, so one rule explains every spec.
    """

    ANY = "any"
    ALL = "all"
    ONLY = "only"


class ElementSelector(WireModel):
    """An AND of conditions on one rendered tree element; at least one must be given."""

    #: the rendered role (``button``, ``textField`` …), compared ignoring case and punctuation
    role: str | None = None
    #: the whole accessible name, exactly (surrounding whitespace ignored)
    name: str | None = None
    #: part of the accessible name, ignoring case
    name_contains: str | None = Field(default=None, min_length=1)
    #: state tags the element must show (``checked``, ``selected``, ``editable`` …)
    states: list[str] = Field(default_factory=list, max_length=16)
    #: state tags the element must not show
    not_states: list[str] = Field(default_factory=list, max_length=16)
    #: an ancestor (any level up) that must match this selector, e.g. a dialog by name
    inside: ElementSelector | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> Self:
        if (
            self.role is None
            and self.name is None
            and self.name_contains is None
            and not self.states
            and not self.not_states
            and self.inside is None
        ):
            raise ValueError("a selector needs at least one of role, name, nameContains, states")
        return self


class AccessibilitySpec(WireModel):
    kind: Literal["accessibility"] = "accessibility"
    selector: ElementSelector
    assertion: AccessibilityAssertion
    #: the value (``value_equals``, exact) or text (``text_contains``, ignoring case)
    expected: str | None = None
    match: MatchPolicy = MatchPolicy.ANY

    @model_validator(mode="after")
    def _expected(self) -> Self:
        needs = self.assertion in (
            AccessibilityAssertion.VALUE_EQUALS,
            AccessibilityAssertion.TEXT_CONTAINS,
        )
        if needs and self.expected is None:
            raise ValueError(f"assertion {self.assertion.value} needs 'expected'")
        if self.assertion == AccessibilityAssertion.TEXT_CONTAINS and self.expected == "":
            raise ValueError("text_contains needs a non-empty 'expected'")
        if not needs and self.expected is not None:
            raise ValueError(f"assertion {self.assertion.value} takes no 'expected'")
        return self


class VisualSpec(WireModel):
    """Text on screen: the tree's names and values and the window title; a window with no
    accessibility tree is read by OCR (its visual tree, runtime/verification/visual.py)."""

    kind: Literal["visual"] = "visual"
    assertion: Literal["text_present", "text_absent"]
    text: str = Field(min_length=1)


class ApplicationStateSpec(WireModel):
    """The desktop's state; ``app`` omitted means the observed (target) window's app."""

    kind: Literal["application_state"] = "application_state"
    assertion: Literal["frontmost", "window_exists", "running", "window_title_contains"]
    #: an app identity: name, executable, WM_CLASS, desktop id or pid, ignoring case
    app: str | None = Field(default=None, min_length=1)
    #: ``window_title_contains`` only: the text the title holds, ignoring case
    text: str | None = Field(default=None, min_length=1)
    #: false turns the assertion around (not frontmost, no such window, not running …)
    expected: bool = True

    @model_validator(mode="after")
    def _text(self) -> Self:
        if self.assertion == "window_title_contains" and self.text is None:
            raise ValueError("window_title_contains needs 'text'")
        if self.assertion != "window_title_contains" and self.text is not None:
            raise ValueError(f"assertion {self.assertion} takes no 'text'")
        return self


class FileSpec(WireModel):
    """A file on this machine, read by the runtime (contents at most 16 MiB)."""

    kind: Literal["file"] = "file"
    #: absolute, or starting with ``~`` (the user's home)
    path: str = Field(min_length=1, max_length=4096)
    assertion: Literal["exists", "contains", "equals", "sha256", "modified_after_start"]
    #: ``contains`` / ``equals``: the text (UTF-8)
    text: str | None = None
    #: ``sha256``: the expected digest, 64 hex digits
    expected: str | None = None

    @model_validator(mode="after")
    def _fields(self) -> Self:
        if not (self.path.startswith("/") or self.path.startswith("~")):
            raise ValueError("path must be absolute (or start with ~)")
        wants_text = self.assertion in ("contains", "equals")
        if wants_text and self.text is None:
            raise ValueError(f"assertion {self.assertion} needs 'text'")
        if self.assertion == "contains" and self.text == "":
            raise ValueError("contains needs a non-empty 'text'")
        if not wants_text and self.text is not None:
            raise ValueError(f"assertion {self.assertion} takes no 'text'")
        if self.assertion == "sha256":
            if self.expected is None or not _SHA256.match(self.expected):
                raise ValueError("sha256 needs 'expected': 64 hex digits")
        elif self.expected is not None:
            raise ValueError(f"assertion {self.assertion} takes no 'expected'")
        return self


class DomSpec(WireModel):
    """A browser page, read through the browser's accessibility tree (no devtools protocol)."""

    kind: Literal["dom"] = "dom"
    assertion: Literal["url_equals", "url_contains", "title_contains", "text_contains"]
    expected: str = Field(min_length=1)


class ExternalReadbackSpec(WireModel):
    """A command the person configured to read state back; runs only when settings allow it
    (``allowExternalReadback``), without a shell."""

    kind: Literal["external_readback"] = "external_readback"
    argv: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1, max_length=256)
    timeout_ms: int = Field(default=5_000, ge=100, le=30_000)
    expect_exit: int = Field(default=0, ge=0, le=255)
    stdout_contains: str | None = Field(default=None, min_length=1)
    #: compared with one trailing newline (of both) ignored
    stdout_equals: str | None = None

    @model_validator(mode="after")
    def _one_stdout_check(self) -> Self:
        if self.stdout_contains is not None and self.stdout_equals is not None:
            raise ValueError("give stdoutContains or stdoutEquals, not both")
        return self


VerificationSpec = Annotated[
    AccessibilitySpec
    | VisualSpec
    | ApplicationStateSpec
    | FileSpec
    | DomSpec
    | ExternalReadbackSpec,
    Field(discriminator="kind"),
]

VERIFICATION_KINDS: tuple[str, ...] = (
    "accessibility",
    "visual",
    "application_state",
    "file",
    "dom",
    "external_readback",
)


class VerificationReason(enum.StrEnum):
    ASSERTION_PASSED = "assertion_passed"
    ASSERTION_FAILED = "assertion_failed"
    UNSUPPORTED_EVIDENCE = "unsupported_evidence"
    MODEL_VISUAL_ASSERTION = "model_visual_assertion"
