"""Step 4's rating: the policy (kernel/policy, docs/policy.md) rates the action against the
session's current observation, its contract, the settings and its bound target.

A session bound to a window that has since closed (a dialog, say) would be refused for ever
as ``focus_mismatch``: the binding lapsed with the window, so it is dropped and the action
rated again, unbound.
"""

from __future__ import annotations

from deskpilot.kernel.broker.controls import Controls
from deskpilot.kernel.policy import PolicyDecision, Reason, evaluate
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.wire import Action, Observation
from deskpilot.store.session_rows import SessionRow
from deskpilot.store.settings import SettingsModel


async def rate(
    sessions: SessionManager,
    controls: Controls,
    row: SessionRow,
    obs: Observation,
    action: Action,
    settings: SettingsModel,
    expected_app: str | None,
) -> tuple[SessionRow, PolicyDecision]:
    """The policy's decision, and the session row it was made for (re-read when the lapsed
    binding was dropped)."""
    decision = evaluate(
        action, obs, row.contract, settings, bound=row.target, expected_app=expected_app
    )
    if (
        decision.reason == Reason.FOCUS_MISMATCH
        and "expectedWindow" in decision.details
        and await controls.drop_closed_binding(row)
    ):
        row = sessions.require_executable(row.id)
        decision = evaluate(
            action, obs, row.contract, settings, bound=None, expected_app=expected_app
        )
    return row, decision
