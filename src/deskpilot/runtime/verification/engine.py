"""The engine: refuse at start what cannot be decided, then decide each spec.

``check_specs`` runs when a task (or an action's ``expect``) is accepted, so a spec the engine
could never answer is a typed refusal then, not a task that fails for good later. ``verify``
answers one :class:`Verdict` per spec, in order; ``overall`` is true only when there is at
least one verdict and every one passed (an undecidable verdict is not a pass).

``model_visual_assertion``: when the decision model says it is ready and the window has no
tree at all (so nothing but pixels shows the state, and OCR could not read them), a ``visual``
spec the engine cannot decide is taken on the model's word: passed, with the reason
``model_visual_assertion`` and evidence saying it is the model's own claim. Never when there is
a tree, never for another kind, and never against evidence (a title that shows a text that
must be absent stays a failure).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.verification import (
    AccessibilitySpec,
    ApplicationStateSpec,
    DomSpec,
    ExternalReadbackSpec,
    FileSpec,
    VerificationReason,
    VerificationSpec,
    VisualSpec,
)

from . import processes
from .accessibility import check_accessibility
from .application_state import check_application_state
from .dom import check_dom
from .evidence import Evidence, Outcome, Verdict
from .files import check_file
from .readback import resolvable, run_readback
from .text import tree_view
from .visual import check_visual

_SPECS: TypeAdapter[list[VerificationSpec]] = TypeAdapter(list[VerificationSpec])

READBACK_OFF = (
    "external_readback verification is off: it runs a program you name. A person can allow "
    "it with `deskpilot settings set allowExternalReadback true`"
)


def parse_specs(raw: Any) -> list[VerificationSpec]:
    """Specs from JSON (a list of objects), or ``invalid_request`` naming the first problem."""
    try:
        return _SPECS.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST, f"invalid verification spec at {where}: {first['msg']}"
        ) from None


def check_specs(specs: Sequence[VerificationSpec], *, allow_external_readback: bool) -> None:
    """Refuse (``invalid_request``, or ``unsupported_platform`` without /proc) a spec the
    engine cannot decide here; silent when every spec can be decided."""
    for i, spec in enumerate(specs):
        if isinstance(spec, ExternalReadbackSpec):
            if not allow_external_readback:
                raise DeskpilotError(
                    ErrorCode.INVALID_REQUEST,
                    READBACK_OFF,
                    details={"index": i, "kind": spec.kind, "setting": "allowExternalReadback"},
                )
            if not resolvable(spec.argv[0]):
                raise DeskpilotError(
                    ErrorCode.INVALID_REQUEST,
                    f"external_readback: the program {spec.argv[0]!r} is not an executable file "
                    "nor found on PATH",
                    details={"index": i, "kind": spec.kind},
                )
        elif (
            isinstance(spec, ApplicationStateSpec)
            and spec.assertion == "running"
            and not processes.available()
        ):
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_PLATFORM,
                "application_state running needs the process table (/proc), absent here",
                details={"index": i, "kind": spec.kind},
            )


async def _decide(
    spec: VerificationSpec, ev: Evidence, *, allow_external_readback: bool
) -> Outcome:
    obs = ev.state.observation if ev.state is not None else None
    if isinstance(spec, AccessibilitySpec):
        return check_accessibility(spec, obs)
    if isinstance(spec, VisualSpec):
        return await check_visual(spec, ev.state)
    if isinstance(spec, ApplicationStateSpec):
        return await check_application_state(spec, ev)
    if isinstance(spec, FileSpec):
        return await check_file(spec, ev.task_started_at)
    if isinstance(spec, DomSpec):
        return check_dom(spec, obs)
    if not allow_external_readback:
        # check_specs refuses this at the start; settings may have changed since: run nothing
        return Outcome(None, {"undecidable": READBACK_OFF, "refused": True})
    return await run_readback(spec)


def _model_claim(spec: VerificationSpec, ev: Evidence, outcome: Outcome) -> bool:
    if not ev.model_ready or ev.state is None or not isinstance(spec, VisualSpec):
        return False
    return outcome.passed is None and tree_view(ev.state.observation).empty


async def verify(
    specs: Sequence[VerificationSpec], evidence: Evidence, *, allow_external_readback: bool
) -> list[Verdict]:
    """One verdict per spec, in order (readbacks run one after another)."""
    verdicts: list[Verdict] = []
    for spec in specs:
        outcome = await _decide(spec, evidence, allow_external_readback=allow_external_readback)
        wire = spec.wire()
        if _model_claim(spec, evidence, outcome):
            verdicts.append(
                Verdict(
                    wire,
                    True,
                    VerificationReason.MODEL_VISUAL_ASSERTION,
                    {
                        **outcome.evidence,
                        "claim": "the decision model's own claim (ready_for_verification); "
                        "the window has no tree and OCR could not check it",
                    },
                )
            )
            continue
        verdicts.append(Verdict(wire, outcome.passed, outcome.reason, outcome.evidence))
    return verdicts


def overall(verdicts: Sequence[Verdict]) -> bool:
    """At least one verdict, and every one passed (undecidable is not passed)."""
    return bool(verdicts) and all(v.passed is True for v in verdicts)
