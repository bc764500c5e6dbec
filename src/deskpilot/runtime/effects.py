"""What an action's result may say of its effect (docs/mcp.md, "What a result says of the
action's effect"): an agent is never told an effect it was not shown.

After the last step the window is looked at once (the state the result carries). What the
result claims follows from that look, and from what the host saw of each step where it
checked (``ActionResult.effect``: typed text read back from the field, a value read back):

* **unconfirmed** (diagnostic code ``action_unconfirmed``, ``effect: "unconfirmed"`` and
  ``effectReason``) when the effect could not be seen, and why:

  - ``app_not_answering``: the app did not answer the look (stopped, busy): its tree is the
    last one read and its screenshot frozen; input to a stopped app waits in the X server
    until it runs again, so a repeat would act twice;
  - ``not_seen``: the host checked the effect and did not find it (its note, which the result
    shows, says what it read back);
  - ``look_incomplete``: the window looks the same, but the look cannot say nothing changed:
    its tree was cut at the read's deadline or could not be read at all. A busy app answers
    late, and what it was asked to do may show later (LibreOffice opened a dialog seconds
    after the key while its tree was being read);
  - ``still_changing``: the window looks the same, but the host's wait ran out of its budget
    while the app was still sending events or the pixels still moving;

* ``action_noop`` only when the window is unchanged (same tree and screenshot), no window
  opened or closed, the look was complete and current, and the host's wait ended with the
  app quiet. The host does not end that wait at the first quiet moment when nothing has
  changed: it watches for a late effect for as long as its wait allows
  (host/late_effects.py), so a dialog a key opens a moment later is seen;
* otherwise nothing is claimed beyond what the new state shows; ``effect: "confirmed"`` when
  the host checked and saw the effect (and then it is no no-op either: a value set to the one
  it already had is where it was asked to be).

Codes and reason names only go into the diagnostic; the host's notes go into the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.runtime.diagnostics import StepRecord
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.state_view import digest

CONFIRMED = "confirmed"
UNCONFIRMED = "unconfirmed"

_NOT_REPEAT = (
    "Do not repeat the action blindly: read the new state (or call get_app_state) and check "
    "whether it took effect."
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the result says of the effect: a code (``action_noop``, ``action_unconfirmed``,
    None), the effect word and reason for the diagnostic, and the words for the text."""

    code: str | None = None
    effect: str | None = None
    reason: str | None = None
    text: str = ""
    #: milliseconds the app has been silent, when it did not answer the look
    silent_ms: int | None = None

    @property
    def noop(self) -> bool:
        return self.code == ErrorCode.ACTION_NOOP.value


def judge(
    steps: list[StepRecord],
    record: StateRecord,
    observed: ObservedState,
    *,
    windows_changed: bool,
) -> Verdict:
    """The verdict on the action whose ``steps`` ran against ``record``, given the look after
    it (``observed``) and whether a window opened or closed meanwhile."""
    obs = observed.observation
    read = obs.tree_read
    if read.stale_age_ms is not None:
        silent = round(read.stale_age_ms)
        return Verdict(
            ErrorCode.ACTION_UNCONFIRMED.value,
            UNCONFIRMED,
            "app_not_answering",
            f"action_unconfirmed: the app did not answer after the action (silent for {silent} "
            "ms: it is stopped or busy), so its effect cannot be seen yet. Input to an app that "
            "is not running waits until it runs again: do not repeat the action; call "
            "get_app_state until the app answers (no stale= mark), then check.",
            silent_ms=silent,
        )
    checked = [s for s in steps if s.effect is not None]
    unseen = [s for s in checked if s.effect == UNCONFIRMED]
    if unseen:
        notes = "; ".join(dict.fromkeys(s.effect_note or "it was not seen" for s in unseen))
        return Verdict(
            ErrorCode.ACTION_UNCONFIRMED.value,
            UNCONFIRMED,
            "not_seen",
            f"action_unconfirmed: the action was sent, but its effect could not be seen "
            f"({notes}). {_NOT_REPEAT}",
        )
    confirmed = Verdict(effect=CONFIRMED) if checked else Verdict()
    unchanged = (
        not windows_changed
        and obs.tree_version == record.tree_version
        and (record.png_digest is None or digest(observed.png) == record.png_digest)
    )
    if not unchanged or checked:
        return confirmed
    if read.partial is not None or obs.truncation.tree_unavailable:
        return Verdict(
            ErrorCode.ACTION_UNCONFIRMED.value,
            UNCONFIRMED,
            "look_incomplete",
            "action_unconfirmed: the window looks the same after the action, but the app "
            "answered only part of the look (its tree was cut at the read's deadline, or "
            "could not be read), so its effect may still come. " + _NOT_REPEAT,
        )
    if any(s.wait_bound == "budget" for s in steps):
        return Verdict(
            ErrorCode.ACTION_UNCONFIRMED.value,
            UNCONFIRMED,
            "still_changing",
            "action_unconfirmed: the window looks the same after the action, but the app was "
            "still busy when the wait for it ran out (waitBound budget), so its effect may "
            "still come. " + _NOT_REPEAT,
        )
    return Verdict(
        ErrorCode.ACTION_NOOP.value,
        text=(
            "action_noop: the action was dispatched but nothing changed in the window (same "
            "tree and screenshot, no window opened), also not in the moment after it. Do not "
            "assume it worked; try another element or approach."
        ),
    )
