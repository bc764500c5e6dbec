"""Replies a scripted model sends: deskpilot's local JSON action protocol, or deliberately not."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

#: a reply dict carrying this key is sent as raw (non-JSON) message content
RAW = "__scripted_raw__"

Reply = dict[str, Any]


def call(name: str, /, **arguments: Any) -> Reply:
    """``{"kind":"tool_call","name":name,"arguments":{...}}``."""
    return {"kind": "tool_call", "name": name, "arguments": arguments}


def action(name: str, /, **arguments: Any) -> dict[str, Any]:
    """One entry of an ``act_batch``: ``{"name": ..., "arguments": {...}}``."""
    return {"name": name, "arguments": arguments}


def batch(actions: Iterable[Mapping[str, Any]]) -> Reply:
    """``act_batch`` over ``actions``: entries from :func:`action`, or :func:`call` replies."""
    entries = [{"name": a["name"], "arguments": dict(a.get("arguments") or {})} for a in actions]
    return call("act_batch", actions=entries)


def final(text: str) -> Reply:
    return {"kind": "final", "text": text}


def garbage(text: str = "I think the next step is to click the OK button.") -> Reply:
    """A reply whose content is ``text`` as is (prose, not a JSON object)."""
    return {RAW: text}


def reply_content(reply: Reply | str) -> str:
    """The message content the server sends for ``reply``."""
    if isinstance(reply, str):
        return reply
    if RAW in reply:
        return str(reply[RAW])
    return json.dumps(reply, ensure_ascii=False)
