"""Lenient in, strict out: normalise every drift form a model produces, fail closed on the rest.

The parser never executes anything and never guesses a malformed tool call into shape; the
only recovery it performs is the text of a ``final`` envelope whose quotes were not escaped.
Whitelisting and argument validation come after (see ``turn.evaluate``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from deskpilot.provider.contract.bounded_json import JSONRejected, loads
from deskpilot.provider.protocol.action import (
    ARG_ALIASES,
    NAME_ALIASES,
    FinalCandidate,
    ParseFailure,
    ParseOutcome,
    ToolCallCandidate,
)
from deskpilot.provider.protocol.boundary import count_calls, final_violation, looks_like_call
from deskpilot.provider.protocol.markers import CALL_ID_PREFIX, TOOL_CALL_TAG, strip_history

_TAG = re.compile(
    rf"<\s*({TOOL_CALL_TAG}|tool_call)\b([^>]*)>(.*?)<\s*/\s*\1\s*>", re.IGNORECASE | re.DOTALL
)
_ATTR = re.compile(r"([A-Za-z_][\w-]*)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+))")
_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n(.*?)\r?\n?```$", re.DOTALL)
_LINE_NAME = re.compile(
    r"^\s*(name|tool|tool_name|function_name|id)\s*[:=]\s*(.*?)\s*$", re.IGNORECASE
)
_LINE_ARGS = re.compile(
    r"^\s*(arguments_json|arguments|args|input|parameters)\s*[:=]\s*(.*)$", re.IGNORECASE
)
_PSEUDO = re.compile(r"^`?([A-Za-z0-9_][A-Za-z0-9_.:-]*)\s*\((.*)\)`?\s*;?$", re.DOTALL)
_FINAL_BROKEN = (
    re.compile(r'^\{\s*"kind"\s*:\s*"final"\s*,\s*"text"\s*:\s*"(.*)"\s*\}$', re.DOTALL),
    re.compile(r'^\{\s*"text"\s*:\s*"(.*)"\s*,\s*"kind"\s*:\s*"final"\s*\}$', re.DOTALL),
)
_UNESCAPED_QUOTE = re.compile(r'(?<!\\)((?:\\\\)*)"')
_ACTION_HINT = re.compile(
    r'"(?:kind|name|tool|tool_name|function_name|arguments|args|input|parameters|'
    r'arguments_json|tool_calls|function_call|function)"\s*:'
)

_TOOL_CALL_KEYS = frozenset({"kind", "id"})
_BARE_KEYS = frozenset({"id", "type"})
_WRAPPER_TOP = frozenset({"role", "content"})
_ITEM_NESTED = frozenset({"id", "type", "function", "index"})
_ITEM_FLAT = frozenset({"id", "type", "name", "arguments", "index"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_WRAPPERS = ("tool_calls", "function_call", "function")


class _Either:
    """Membership in either collection, without building a union per call."""

    __slots__ = ("a", "b")

    def __init__(self, a: Collection[str], b: Collection[str]) -> None:
        self.a, self.b = a, b

    def __contains__(self, item: object) -> bool:
        return item in self.a or item in self.b

    def __iter__(self) -> Iterator[str]:
        yield from self.a
        yield from self.b

    def __len__(self) -> int:
        return len(self.a) + len(self.b)


class _Fail(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _arguments(value: Any) -> dict[str, Any]:
    """Objects pass; JSON strings are decoded; nothing else ever becomes ``{}``."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise _Fail("empty_arguments", "the arguments are an empty string")
        try:
            decoded = loads(value)
        except JSONRejected as exc:
            raise _Fail("invalid_json", f"the arguments string is not usable JSON: {exc}") from None
        if not isinstance(decoded, dict):
            raise _Fail("arguments_not_object", "the arguments string is not a JSON object")
        return decoded
    raise _Fail("arguments_not_object", "the arguments are not a JSON object")


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Fail("invalid_tool_call", "the tool name is missing or not a string")
    return value.strip()


def _envelope(
    obj: Mapping[str, Any], allowed: frozenset[str], *, args_optional: bool
) -> tuple[str, dict[str, Any], str | None]:
    name_keys = [k for k in NAME_ALIASES if k in obj]
    arg_keys = [k for k in ARG_ALIASES if k in obj]
    if len(name_keys) > 1:
        raise _Fail("ambiguous_alias", f"several name fields at once: {', '.join(name_keys)}")
    if len(arg_keys) > 1:
        raise _Fail("ambiguous_alias", f"several argument fields at once: {', '.join(arg_keys)}")
    if not name_keys:
        raise _Fail("invalid_tool_call", "the tool_call envelope has no name")
    extra = set(obj) - allowed - set(name_keys) - set(arg_keys)
    if extra:
        raise _Fail("unknown_field", f"unknown fields {sorted(extra)}")
    name = _name(obj[name_keys[0]])
    call_id = obj.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise _Fail("invalid_tool_call", "the call id is not a string")
    if arg_keys:
        arguments = _arguments(obj[arg_keys[0]])
    elif args_optional:
        arguments = {}
    else:
        raise _Fail("invalid_tool_call", "the tool call has no arguments")
    return name, arguments, call_id


def _openai_item(item: Any) -> tuple[str, dict[str, Any], str | None]:
    if not isinstance(item, dict):
        raise _Fail("invalid_tool_call", "a tool_calls item is not an object")
    if "type" in item and item["type"] != "function":
        raise _Fail("invalid_tool_call", "a tool_calls item type is not function")
    if "function" in item:
        extra = set(item) - _ITEM_NESTED
        if extra:
            raise _Fail(
                "wrapper_unknown_field", f"unknown fields in a tool_calls item: {sorted(extra)}"
            )
        return (*_function(item["function"]), _id(item))
    extra = set(item) - _ITEM_FLAT
    if extra:
        raise _Fail(
            "wrapper_unknown_field", f"unknown fields in a tool_calls item: {sorted(extra)}"
        )
    if "arguments" not in item:
        raise _Fail("invalid_tool_call", "a tool_calls item has no arguments")
    return _name(item.get("name")), _arguments(item["arguments"]), _id(item)


def _id(item: Mapping[str, Any]) -> str | None:
    value = item.get("id")
    return value if isinstance(value, str) else None


def _function(fn: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(fn, dict):
        raise _Fail("invalid_tool_call", "function is not an object")
    extra = set(fn) - _FUNCTION_KEYS
    if extra:
        raise _Fail("wrapper_unknown_field", f"unknown fields in function: {sorted(extra)}")
    if "arguments" not in fn:
        raise _Fail("invalid_tool_call", "function has no arguments")
    return _name(fn.get("name")), _arguments(fn["arguments"])


def _check_top(obj: Mapping[str, Any], allowed: frozenset[str]) -> None:
    extra = set(obj) - allowed
    if extra:
        raise _Fail("unknown_field", f"unknown fields next to the wrapper: {sorted(extra)}")
    if "role" in obj and obj["role"] != "assistant":
        raise _Fail("invalid_tool_call", "the wrapper role is not assistant")


def _from_object(
    obj: dict[str, Any], selected: Collection[str], known: Collection[str]
) -> ParseOutcome | None:
    """Classify a JSON object; None means it is not protocol at all (business JSON)."""
    if "kind" in obj:
        kind = obj["kind"]
        if kind == "final":
            extra = set(obj) - {"kind", "text"}
            if extra:
                raise _Fail("unknown_field", f"unknown fields in a final: {sorted(extra)}")
            if not isinstance(obj.get("text"), str):
                raise _Fail("invalid_final", "final.text is missing or not a string")
            return FinalCandidate(obj["text"], "json_final")
        if kind == "tool_call":
            name, args, call_id = _envelope(obj, _TOOL_CALL_KEYS, args_optional=True)
            return ToolCallCandidate(name, args, "json_action", call_id)
        if isinstance(kind, str) and kind in selected:
            raise _Fail("kind_is_tool_name", f"kind names the tool {kind!r}; use kind tool_call")
        raise _Fail("invalid_kind", "kind must be tool_call or final")
    if "tool_calls" in obj:
        _check_top(obj, _WRAPPER_TOP | {"tool_calls"})
        calls = obj["tool_calls"]
        if not isinstance(calls, list) or not calls:
            raise _Fail("invalid_tool_call", "tool_calls must be a non-empty list")
        if len(calls) > 1:
            raise _Fail("multiple_tool_calls", f"{len(calls)} tool calls in one reply")
        name, args, call_id = _openai_item(calls[0])
        return ToolCallCandidate(name, args, "openai_tool_calls", call_id)
    if "function_call" in obj:
        _check_top(obj, _WRAPPER_TOP | {"function_call"})
        name, args = _function(obj["function_call"])
        return ToolCallCandidate(name, args, "openai_function_call")
    if "function" in obj and isinstance(obj["function"], dict):
        _check_top(obj, frozenset({"function", "type", "id"}))
        if "type" in obj and obj["type"] != "function":
            raise _Fail("invalid_tool_call", "type is not function")
        name, args = _function(obj["function"])
        return ToolCallCandidate(name, args, "openai_function", _id(obj))
    names = [obj[n] for n in NAME_ALIASES if n in obj]
    call_id = obj.get("id")
    protocol_id = isinstance(call_id, str) and call_id.startswith(CALL_ID_PREFIX)
    names_tool = any(isinstance(n, str) and (n in known or n in selected) for n in names)
    if not (names_tool or protocol_id):
        return None
    if not any(a in obj for a in ARG_ALIASES) and not protocol_id:
        raise _Fail("unknown_field", "an object naming a tool without an arguments field")
    name, args, call_id = _envelope(obj, _BARE_KEYS, args_optional=False)
    return ToolCallCandidate(name, args, "bare_envelope", call_id)


def _unfence(text: str) -> tuple[str, bool]:
    if not text.startswith("```"):
        return text, False
    match = _FENCE.match(text)
    if match and match.group(1).lower() in ("", "json", "jsonc", "javascript", "js", "text"):
        return match.group(2).strip(), True
    return text, False


def _line_form(
    text: str, *, need_known: Collection[str] | None, default_name: str | None = None
) -> ToolCallCandidate | None:
    lines = text.splitlines()
    name_lines: list[tuple[str, str]] = []
    args_text: str | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        args_match = _LINE_ARGS.match(line)
        if args_match:
            args_text = "\n".join([args_match.group(2), *lines[i + 1 :]]).strip()
            break
        name_match = _LINE_NAME.match(line)
        if not name_match:
            return None
        if name_match.group(1).lower() != "id":
            name_lines.append((name_match.group(1).lower(), name_match.group(2).strip("\"'`")))
    if not name_lines:
        if default_name is None or args_text is None:
            return None
        name_lines.append(("name", default_name))
    if need_known is not None and (args_text is None or name_lines[0][1] not in need_known):
        return None
    if len(name_lines) > 1:
        keys = {k for k, _ in name_lines}
        if len(keys) > 1:
            raise _Fail("ambiguous_alias", "several name lines at once")
        raise _Fail("multiple_tool_calls", "several tool names in one reply")
    if args_text is None:
        raise _Fail("invalid_tool_call", "a line-form call without arguments")
    return ToolCallCandidate(_name(name_lines[0][1]), _arguments(args_text), "line")


def _tag(
    match: re.Match[str], selected: Collection[str], known: Collection[str]
) -> ToolCallCandidate:
    attrs: dict[str, str] = {}
    for attr in _ATTR.finditer(match.group(2)):
        attrs[attr.group(1).lower()] = next(g for g in attr.groups()[1:] if g is not None)
    unknown = set(attrs) - {"name", "id", "type"}
    if unknown:
        raise _Fail("unknown_field", f"unknown tag attributes {sorted(unknown)}")
    attr_name = attrs.get("name")
    body, _ = _unfence(match.group(3).strip())
    if not body:
        raise _Fail("empty_arguments", "the tool-call tag is empty")
    candidate: ToolCallCandidate | None
    if body[0] in "[{":
        candidate = _tag_json(body, attr_name, selected, known)
    else:
        candidate = _line_form(body, need_known=None, default_name=attr_name)
        if candidate is None:
            raise _Fail("invalid_tool_call", "the tool-call tag body is neither JSON nor lines")
        candidate = ToolCallCandidate(candidate.name, candidate.arguments, "tag_lines")
    if attr_name is not None and candidate.name != attr_name:
        raise _Fail("name_mismatch", f"tag names {attr_name!r}, envelope names {candidate.name!r}")
    return ToolCallCandidate(
        candidate.name, candidate.arguments, candidate.form, candidate.call_id or attrs.get("id")
    )


def _tag_json(
    body: str, attr_name: str | None, selected: Collection[str], known: Collection[str]
) -> ToolCallCandidate:
    try:
        value = loads(body)
    except JSONRejected as exc:
        raise _Fail("invalid_json", f"the tool-call tag holds unusable JSON: {exc}") from None
    if isinstance(value, list):
        if len(value) != 1:
            raise _Fail("multiple_tool_calls", "several calls in one tag")
        value = value[0]
    if not isinstance(value, dict):
        raise _Fail("invalid_tool_call", "the tool-call tag does not hold an object")
    if "kind" in value or any(w in value for w in _WRAPPERS):
        outcome = _from_object(value, selected, known)
        if not isinstance(outcome, ToolCallCandidate):
            raise _Fail("invalid_tool_call", "the tool-call tag does not hold a tool call")
        return ToolCallCandidate(outcome.name, outcome.arguments, "tag", outcome.call_id)
    has_args = any(a in value for a in ARG_ALIASES)
    if attr_name is not None and not has_args:
        return ToolCallCandidate(attr_name, value, "tag_attr")
    if attr_name is not None and not any(n in value for n in NAME_ALIASES):
        value = {"name": attr_name, **value}
    name, args, call_id = _envelope(value, _BARE_KEYS, args_optional=True)
    return ToolCallCandidate(name, args, "tag", call_id)


def _recover_final(text: str) -> str | None:
    for pattern in _FINAL_BROKEN:
        match = pattern.match(text)
        if match:
            inner = _UNESCAPED_QUOTE.sub(lambda m: m.group(1) + '\\"', match.group(1))
            inner = inner.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
            try:
                value = loads(f'"{inner}"')
            except JSONRejected:
                return None
            return value if isinstance(value, str) else None
    return None


def _final(
    text: str, form: str, selected: Collection[str], known: Collection[str], stripped: bool
) -> ParseOutcome:
    code = final_violation(text, selected, known)
    if code:
        return ParseFailure(code, "the final answer carries a tool call or protocol markup", form)
    if not text.strip():
        return ParseFailure("empty_response", "the final answer is empty", form)
    return FinalCandidate(text, form, stripped)


def parse_output(
    raw: str, selected: Collection[str], known: Collection[str] = frozenset()
) -> ParseOutcome:
    """Read one assistant reply. ``selected`` = tools shown this turn; ``known`` = all tools."""
    try:
        return _parse(raw, selected, _Either(selected, known))
    except _Fail as fail:
        return ParseFailure(fail.code, fail.message)


def _parse(raw: str, selected: Collection[str], known: Collection[str]) -> ParseOutcome:
    text = raw.strip()
    if not text:
        return ParseFailure("empty_response", "the reply is empty", "empty")
    text, stripped = strip_history(text)
    if stripped and not text:
        return ParseFailure("raw_protocol_markup", "the reply only replays call history", "history")
    if "<" in text:
        tags = list(_TAG.finditer(text))
        if len(tags) > 1:
            return ParseFailure("multiple_tool_calls", f"{len(tags)} tool-call tags", "tag")
        if tags:
            return _tag(tags[0], selected, known)
    body, fenced = _unfence(text)
    if body[:1] in ("{", "["):
        try:
            value = loads(body)
        except JSONRejected as exc:
            if exc.reason == "too_deep":
                return ParseFailure("invalid_json", f"the reply is not usable: {exc}", "json")
            recovered = _recover_final(body)
            if recovered is not None:
                return _final(recovered, "recovered_final", selected, known, stripped)
            if _ACTION_HINT.search(body):
                if count_calls(body, selected, known) > 1:
                    return ParseFailure("multiple_tool_calls", "several calls in one reply", "json")
                return ParseFailure("invalid_json", "the reply is not valid JSON", "json")
            return _final(text, "plain", selected, known, stripped)
        if isinstance(value, dict):
            outcome = _from_object(value, selected, known)
            if isinstance(outcome, FinalCandidate):
                return _final(outcome.text, outcome.form, selected, known, stripped)
            if isinstance(outcome, ToolCallCandidate) and fenced:
                form = "fenced_" + outcome.form
                return ToolCallCandidate(outcome.name, outcome.arguments, form, outcome.call_id)
            if outcome is not None:
                return outcome
        elif isinstance(value, list) and looks_like_call(value, selected, known):
            calls = sum(1 for v in value if looks_like_call(v, selected, known))
            if calls > 1:
                return ParseFailure(
                    "multiple_tool_calls", f"{calls} tool calls in an array", "array"
                )
            return ParseFailure("tool_call_like_final", "a tool call inside an array", "array")
        return _final(text, "business_json", selected, known, stripped)
    line = _line_form(body, need_known=known)
    if line is not None:
        return line
    pseudo = _PSEUDO.match(body)
    if pseudo and pseudo.group(1) in known:
        return ParseFailure("tool_call_like_final", "a function-style pseudo call", "pseudo_call")
    return _final(text, "plain", selected, known, stripped)


def project_native_calls(calls: list[dict[str, Any]], content: str) -> str:
    """Accidental native ``assistant.tool_calls`` become the same text wrapper the parser reads,
    so they pass the same whitelist and validation; bad arguments stay bad (never ``{}``)."""
    items: list[Any] = []
    for call in calls:
        if not isinstance(call, dict):
            items.append(call)
            continue
        item = {k: call[k] for k in ("id", "type", "function") if k in call}
        if isinstance(item.get("function"), dict):
            item["function"] = {
                k: item["function"][k] for k in ("name", "arguments") if k in item["function"]
            }
        items.append(item)
    return json.dumps({"tool_calls": items}, ensure_ascii=False)
