"""A disabled element is not acted on: the click, invoke, value or text is refused before
anything is dispatched.

A person does not press a greyed-out button expecting something to happen; a pointer click
on it does nothing, and the toolkits refuse or ignore its action. Sending one anyway, and
answering with a fresh state as if it had worked, invited the agent to read a change into
it. The check reads the state's tree (the one the agent acted on), as ``text_targets`` does,
so the refusal costs nothing and the state_id stays valid. Right clicks, scrolling and
secondary actions are left alone (a context menu may still open on a disabled element).
"""

from __future__ import annotations

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.tree import parse_tree
from deskpilot.runtime.refusals import REASON_ADVICE, refusal

REASON = "disabled"


def check_enabled(tree: str, element_id: int, tool: str) -> None:
    """Refuse (``unsupported_action``, ``details.reason = "disabled"``) ``tool`` on an element
    the tree shows ``[disabled]``; an id the tree does not have is left to the plan."""
    target = parse_tree(tree).elements.get(element_id)
    if target is None or "disabled" not in target.states:
        return
    raise refusal(
        ErrorCode.UNSUPPORTED_ACTION,
        f"Element {element_id} ({target.role}) is disabled: {tool} on it would do nothing, so "
        f"nothing was sent and the state_id is still valid. {REASON_ADVICE[REASON]}",
        reason=REASON,
        elementId=element_id,
        role=target.role,
    )
