"""A state as the agent sees it: the model frame, the stateId issued for it, and its text.

``present`` is the one step every tool that hands out a state takes (get_app_state,
get_screen_state, an action's result): it paints the model frame (secure regions out unless
``redactSensitiveContent`` is off, docs/privacy.md), issues the stateId, and renders the
header and tree. ``render_state`` is the header format of docs/mcp.md ("What an agent sees").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import AppIdentity, ObservationBody
from deskpilot.runtime.call import Call, ModelFrame
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.diagnostics import ObservationOutcome
from deskpilot.runtime.state_ids import AppKey, StateRecord
from deskpilot.vault.images import model_frame as paint_model_frame
from deskpilot.vision.outline import UNSURE_MARK


@dataclass(frozen=True)
class Presented:
    record: StateRecord
    frame: ModelFrame | None
    text: str


def app_key(obs: ObservationBody) -> AppKey:
    return AppKey(pid=obs.app.pid, window_id=obs.window.window_id)


def app_label(ident: AppIdentity) -> str:
    return ident.name or ident.executable or ident.wm_class or ident.desktop_id or "unknown"


def digest(png: bytes | None) -> str | None:
    return hashlib.blake2b(png, digest_size=16).hexdigest() if png is not None else None


def model_frame(
    ctx: ToolContext, call: Call, png: bytes | None, obs: ObservationBody
) -> ModelFrame | None:
    """The JPEG the model is shown (``formatMs``); None without a screenshot."""
    if png is None:
        return None
    with call.watch.stage("format"):
        redact = ctx.kernel.settings().redact_sensitive_content
        regions = obs.sensitive_regions if redact else None
        jpeg, width, height, _ = paint_model_frame(
            png,
            redact_regions=regions or None,
            window_size=(obs.window.bounds.width, obs.window.bounds.height),
        )
    return ModelFrame(jpeg=jpeg, width=width, height=height)


def issue_state(
    ctx: ToolContext, call: Call, obs: ObservationBody, png: bytes | None, frame: ModelFrame | None
) -> StateRecord:
    """A new stateId for this observation; a new state of the app under recovery lifts it."""
    record = ctx.states.issue(
        turn=call.turn.key,
        agent_session=call.agent_session,
        app=app_key(obs),
        app_identity=obs.app,
        window=obs.window,
        frame_id=obs.frame_id,
        tree_version=obs.tree_version,
        tree=obs.tree,
        element_count=obs.element_count,
        image_size=(frame.width, frame.height) if frame else None,
        png_digest=digest(png),
        tree_complete=tree_complete(obs),
    )
    call.diag.state_id_issued = True
    call.diag.observation_outcome = ObservationOutcome.AVAILABLE
    recovery = call.turn.recovery
    if recovery is not None and recovery.same_app(app_key(obs), app_label(obs.app)):
        call.turn.recovery = None
    return record


def tree_complete(obs: ObservationBody) -> bool:
    """Is the observation's tree a whole accessibility tree — now, or the last one of an app
    that stopped answering? Not when it was cut at the read's deadline, could not be read, or
    is an OCR outline of the screenshot."""
    r = obs.tree_read
    return r.source == "accessibility" and r.partial is None and not obs.truncation.tree_unavailable


def present(ctx: ToolContext, call: Call, observed: ObservedState) -> Presented:
    obs = observed.observation
    frame = model_frame(ctx, call, observed.png, obs)
    record = issue_state(ctx, call, obs, observed.png, frame)
    with call.watch.stage("format"):
        text = render_state(record, obs, frame)
    return Presented(record, frame, text)


def render_state(record: StateRecord, obs: ObservationBody, frame: ModelFrame | None) -> str:
    """The header (App=, Window=, state_id, frameId, treeVersion, image) and the tree."""
    ident = obs.app
    lines = [
        f'App=(name="{app_label(ident)}", pid={ident.pid})',
        f'Window=(title="{obs.window.title}", id={obs.window.window_id})',
        f"state_id={record.state_id}",
        f"frameId={obs.frame_id}",
        f"treeVersion={obs.tree_version}",
    ]
    if frame is not None:
        lines.append(f"image={frame.width}x{frame.height} (coordinates are pixels of this image)")
    else:
        lines.append("image=none (use element ids)")
    if obs.url:
        lines.append(f"url={obs.url}")
    t = obs.truncation
    if t.omitted_elements or t.elided_children:
        lines.append(f"truncation=omitted {t.omitted_elements}, elided {t.elided_children}")
    for line in tree_read_lines(obs):
        lines.append(line)
    if t.tree_unavailable:
        # the deadline is said: one set far too short (DESKPILOT_TREE_DEADLINE_MS) makes every
        # app "not answer", and no retry helps that
        deadline = obs.tree_read.deadline_ms
        within = f" within the {round(deadline)} ms read deadline" if deadline is not None else ""
        lines.append(
            f"tree=unavailable (the app did not answer accessibility calls{within}, e.g. "
            "busy in a dialog; there are no element ids: call get_app_state again shortly, "
            "or act on points of the image)"
        )
    lines.append(f"elements={obs.element_count}")
    lines.append("")
    lines.append(obs.tree.rstrip("\n"))
    return "\n".join(lines)


#: an element of an accessibility tree read from the screenshot (kernel/opaque_text.py)
_OCR_LINE = re.compile(r" \[ocr\] \[\d+\]$", re.M)


def tree_read_lines(obs: ObservationBody) -> list[str]:
    """What the header says of how the tree was read (protocol/wire.py ``TreeRead``): a
    visual tree, a partial one, a stale one, a cache that could not be trusted, and other
    windows lying over this one."""
    r = obs.tree_read
    lines: list[str] = []
    if r.source == "visual":
        unsure = (
            "; text marked [uncertain] was read with low confidence and may be misread: do "
            "not copy it as exact"
            if UNSURE_MARK + " [" in obs.tree
            else ""
        )
        lines.append(
            "tree=visual (no accessibility tree: an OCR outline of the screenshot; element ids "
            f"click the centre of their text; sensitive regions are not known{unsure})"
        )
    if r.partial is not None:
        details = (
            "; values, states and actions of some elements were not read in time: a field "
            "shown without a value may have one"
            if r.details_unread
            else ""
        )
        lines.append(
            f"partial={r.partial} ({r.unread_subtrees} "
            f"{'subtree' if r.unread_subtrees == 1 else 'subtrees'} unread, marked in the tree"
            f"{details}; element ids of this state cannot be acted on: observe again, or act "
            "on points of the image)"
        )
    if r.stale_age_ms is not None:
        lines.append(
            f"stale=age {round(r.stale_age_ms)} ms (the app did not answer in time: this is "
            "the last tree read of it; element ids cannot be acted on)"
        )
    if r.cache_note:
        lines.append(f"cache={r.cache} ({r.cache_note})")
    if r.source != "visual" and _OCR_LINE.search(obs.tree):
        lines.append(
            "ocr=text some widgets draw but do not expose (elements marked [ocr], read from "
            "the screenshot: a click on one clicks the centre of its text; set_value and "
            "select_text need an accessibility element; [uncertain]: read with low confidence, "
            "it may be misread; text [covered] [ocr] is a part another window lies over: its "
            "items are not read there)"
        )
    if obs.covered_regions:
        n = len(obs.covered_regions)
        lines.append(
            f"covered={n} {'region' if n == 1 else 'regions'} (other windows lie over part of "
            "this one: the image shows them there, points there are refused"
            + ("; their text is left out of this outline" if r.source == "visual" else "")
            + ")"
        )
    return lines
