"""The reference model: one server for a whole run, answering each case with its policy.

A request is routed to the case whose first user task it carries (the prompts are ours and
distinct), so the cases of a run can share one server whatever order they run in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deskpilot.smoke.case_model import Case
from deskpilot.smoke.fake_model.desktop_policies import DESKTOP_POLICIES
from deskpilot.smoke.fake_model.local_policies import LOCAL_POLICIES
from deskpilot.smoke.fake_model.reading import Request
from deskpilot.smoke.fake_model.replies import Reply, final
from deskpilot.smoke.fake_model.server import Policy

REFERENCE_POLICIES: dict[str, Policy] = {**LOCAL_POLICIES, **DESKTOP_POLICIES}


def first_task(case: Case) -> str:
    return next(t for t in case.turns if not t.startswith("/"))


class Router:
    """``policy(request)`` for a set of cases; ``overrides`` replace a case's policy (the
    self-test's known-bad answers)."""

    def __init__(self, cases: Sequence[Case], overrides: Mapping[str, Policy] | None = None):
        self.routes = [(first_task(c), c.name) for c in cases]
        self.policies = {**REFERENCE_POLICIES, **(overrides or {})}

    def case_of(self, request: Request) -> str | None:
        users = request.user_texts
        for task, name in self.routes:
            if any(task in text for text in users):
                return name
        return None

    def __call__(self, request: Request) -> Reply | str:
        name = self.case_of(request)
        if name is None:  # the preflight, or a prompt no case sent
            return final("OK")
        policy = self.policies.get(name)
        if policy is None:
            return final(f"the reference model has no policy for case {name}")
        return policy(request)
