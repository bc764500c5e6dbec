"""The verification engine: decides the specs of ``deskpilot.protocol.verification``.

Public API (docs/verification.md is the long form)::

    check_specs(specs, allow_external_readback=flag)   # at start_task / an action's expect
    verdicts = await verify(specs, Evidence(state, windows, task_started_at, model_ready),
                            allow_external_readback=flag)
    overall(verdicts)                                  # at least one, and all passed
    specs, source = derive_criteria(goal, acceptance, target_app)

It imports only ``deskpilot.protocol`` and the standard library: the caller brings the
observation, the window list and the ``allowExternalReadback`` setting, and stores the
verdicts (``Verdict.to_json``).
"""

from __future__ import annotations

from .derivation import CriteriaSource, derive_criteria, goal_quotes
from .engine import READBACK_OFF, check_specs, overall, parse_specs, verify
from .evidence import Evidence, Verdict
from .files import READ_CAP
from .readback import STDOUT_CAP

__all__ = [
    "READBACK_OFF",
    "READ_CAP",
    "STDOUT_CAP",
    "CriteriaSource",
    "Evidence",
    "Verdict",
    "check_specs",
    "derive_criteria",
    "goal_quotes",
    "overall",
    "parse_specs",
    "verify",
]
