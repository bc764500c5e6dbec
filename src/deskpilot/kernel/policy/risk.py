"""Risk L0–L4: the larger of the action's baseline and its effect class, then escalations.

Baseline and effect tables: docs/policy.md, "Risk". Escalations:

* an unknown target is at least L2 (we do not know what the input lands on);
* a text write into a sensitive target is L4 when the data is a credential, else at least L2;
* any credential text write is L4 (docs/architecture.md), wherever it lands;
* a local text write of non-public data is at least L2.
"""

from __future__ import annotations

from deskpilot.kernel.policy.context import PolicyContext
from deskpilot.protocol.session import DataClass, EffectClass, RiskLevel, TargetKind

#: L0 actions; every other action kind is L1 at baseline.
READ_ONLY_KINDS = frozenset({"observe", "move", "scroll", "wait_for"})

EFFECT_RISK: dict[EffectClass, RiskLevel] = {
    EffectClass.READ_ONLY: RiskLevel.L0,
    EffectClass.REVERSIBLE_LOCAL: RiskLevel.L1,
    EffectClass.EXTERNAL_WRITE: RiskLevel.L2,
    EffectClass.HIGH_IMPACT: RiskLevel.L3,
    EffectClass.RESTRICTED: RiskLevel.L4,
}


def baseline(kind: str) -> RiskLevel:
    return RiskLevel.L0 if kind in READ_ONLY_KINDS else RiskLevel.L1


def rate(ctx: PolicyContext) -> RiskLevel:
    level = max(baseline(ctx.kind), EFFECT_RISK[ctx.effect])
    if ctx.target_kind == TargetKind.UNKNOWN:
        level = max(level, RiskLevel.L2)
    if ctx.text_write:
        credential = DataClass.CREDENTIAL in ctx.data_classes
        if credential:
            level = RiskLevel.L4
        elif ctx.sensitive_target:
            level = max(level, RiskLevel.L2)
        if ctx.effect != EffectClass.EXTERNAL_WRITE and (ctx.data_classes - {DataClass.PUBLIC}):
            level = max(level, RiskLevel.L2)
    return RiskLevel(level)
