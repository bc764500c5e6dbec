"""Turn policy: preparation, evaluation, final policy, recovery and the execution ledger."""

from deskpilot.provider.turn.evaluate import Verdict, evaluate
from deskpilot.provider.turn.final_policy import check_final, fallback_plan
from deskpilot.provider.turn.ledger import ExecutionLedger, LedgerEntry
from deskpilot.provider.turn.preparation import PreparedTurn, prepare_turn
from deskpilot.provider.turn.recovery import RecoveryBudget, category, repair_prompt
from deskpilot.provider.turn.result import TurnResult
from deskpilot.provider.turn.step import Step, judge
from deskpilot.provider.turn.vision_policy import check_vision_final, is_vision_refusal, vision_gate

__all__ = [
    "ExecutionLedger",
    "LedgerEntry",
    "PreparedTurn",
    "RecoveryBudget",
    "Step",
    "TurnResult",
    "Verdict",
    "category",
    "check_final",
    "check_vision_final",
    "evaluate",
    "fallback_plan",
    "is_vision_refusal",
    "judge",
    "prepare_turn",
    "repair_prompt",
    "vision_gate",
]
