"""Fuzz matrix: every alias × argument form × wrapper normalises; every fail-closed case fails."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_helpers import TOOLS

from deskpilot.provider import evaluate
from deskpilot.provider.protocol import (
    FinalCandidate,
    ParseFailure,
    ToolCallCandidate,
    parse_output,
)

BY_NAME = {t.name: t for t in TOOLS}
SELECTED = frozenset({"read", "bash"})
ARGS = {"path": "package.json"}
NAME_ALIASES = ["name", "tool", "tool_name", "function_name"]
ARG_ALIASES = ["arguments", "args", "input", "parameters", "arguments_json"]


def verdict(raw: str, selected: frozenset[str] = SELECTED) -> dict:
    return evaluate(raw, selected=selected, tools=BY_NAME).to_json()


EXPECTED_CALL = {"ok": True, "kind": "tool_call", "name": "read", "arguments": ARGS}


def _envelopes() -> list[tuple[str, dict]]:
    out = []
    for name_key, arg_key, as_string in itertools.product(NAME_ALIASES, ARG_ALIASES, [False, True]):
        args = json.dumps(ARGS) if as_string else ARGS
        out.append(
            (
                f"{name_key}/{arg_key}/{'str' if as_string else 'obj'}",
                {name_key: "read", arg_key: args},
            )
        )
    return out


def _wrap(kind: str, env: dict) -> str:
    body = json.dumps(env)
    if kind == "bare":
        return body
    if kind == "json_action":
        return json.dumps({"kind": "tool_call", **env})
    if kind == "fenced":
        return f"```json\n{json.dumps({'kind': 'tool_call', **env})}\n```"
    if kind == "fenced_bare":
        return f"```\n{body}\n```"
    if kind == "dp_tag":
        return f"<dp_tool_call>{body}</dp_tool_call>"
    if kind == "upper_tag":
        return f"<DP_TOOL_CALL>\n{body}\n</DP_TOOL_CALL>"
    if kind == "tool_call_tag":
        return f"<tool_call>{body}</tool_call>"
    if kind == "mixed_case_tag_with_prose":
        return f"Reading it now.\n<Tool_Call>{body}</tool_call>"
    if kind == "attributed_tag":
        return f'<dp_tool_call name="read" id="dp_tool_1">{body}</dp_tool_call>'
    raise AssertionError(kind)


WRAPPERS = [
    "bare",
    "json_action",
    "fenced",
    "fenced_bare",
    "dp_tag",
    "upper_tag",
    "tool_call_tag",
    "mixed_case_tag_with_prose",
    "attributed_tag",
]


@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize(("label", "envelope"), _envelopes(), ids=[e[0] for e in _envelopes()])
def test_alias_and_wrapper_matrix_normalises(wrapper: str, label: str, envelope: dict) -> None:
    assert verdict(_wrap(wrapper, envelope)) == EXPECTED_CALL


@pytest.mark.parametrize(
    "raw",
    [
        '<dp_tool_call name="read">{"path":"package.json"}</dp_tool_call>',
        '<tool_call name=\'read\'>{"path":"package.json"}</tool_call>',
        '<TOOL_CALL NAME=read>{"path":"package.json"}</TOOL_CALL>',
        'name=read\narguments_json: {"path":"package.json"}',
        'id=dp_tool_9\nname="read"\narguments_json: {"path":"package.json"}',
        'tool: read\nargs: {"path":"package.json"}',
        'tool_name: read\nparameters: {\n  "path": "package.json"\n}',
        '<dp_tool_call>\nname=read\narguments_json: {"path":"package.json"}\n</dp_tool_call>',
        '<dp_tool_call name="read">\nargs: {"path":"package.json"}\n</dp_tool_call>',
        '{"function_call":{"name":"read","arguments":"{\\"path\\":\\"package.json\\"}"}}',
        '{"function_call":{"name":"read","arguments":{"path":"package.json"}}}',
        '{"type":"function","function":{"name":"read","arguments":{"path":"package.json"}}}',
        '{"function":{"name":"read","arguments":"{\\"path\\":\\"package.json\\"}"}}',
        '{"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\\"path\\":\\"package.json\\"}"}}]}',
        '{"tool_calls":[{"function":{"name":"read","arguments":{"path":"package.json"}}}]}',
        '{"role":"assistant","content":null,"tool_calls":[{"name":"read","arguments":{"path":"package.json"}}]}',
        '{"tool_calls":[{"id":"c1","type":"function","name":"read","arguments":"{\\"path\\":\\"package.json\\"}"}]}',
        '{"id":"dp_tool_abc","name":"read","arguments":{"path":"package.json"}}',
        '  \n{"kind":"tool_call","name":"read","arguments":{"path":"package.json"}}\n ',
        '{"kind":"tool_call","id":"x","name":"read","arguments":{"path":"package.json"}}',
    ],
)
def test_other_drift_forms_normalise(raw: str) -> None:
    assert verdict(raw) == EXPECTED_CALL


FAIL_CLOSED = [
    # (raw, expected error code)
    (
        '{"kind":"tool_call","name":"read","arguments":{"path":"a"}}\n'
        '{"kind":"tool_call","name":"read","arguments":{"path":"b"}}',
        "multiple_tool_calls",
    ),
    (
        'First:\n```json\n{"kind":"tool_call","name":"read","arguments":{"path":"a"}}\n```\n'
        'Then:\n```json\n{"kind":"tool_call","name":"bash","arguments":{"command":"ls"}}\n```',
        "multiple_tool_calls",
    ),
    (
        '{"kind":"final","text":"[{\\"name\\":\\"read\\",\\"args\\":{}},'
        '{\\"name\\":\\"bash\\",\\"args\\":{}}]"}',
        "multiple_tool_calls",
    ),
    (
        '{"kind":"tool_call","name":"read","arguments":{"path":"a"}}{"kind":"tool_call","name":"bash","arguments":{}}',
        "multiple_tool_calls",
    ),
    (
        '<dp_tool_call>{"name":"read","arguments":{"path":"a"}}</dp_tool_call><dp_tool_call>{"name":"bash","arguments":{"command":"ls"}}</dp_tool_call>',
        "multiple_tool_calls",
    ),
    (
        '{"tool_calls":[{"function":{"name":"read","arguments":"{}"}},{"function":{"name":"bash","arguments":"{}"}}]}',
        "multiple_tool_calls",
    ),
    (
        '[{"name":"read","arguments":{"path":"a"}},{"name":"bash","arguments":{"command":"ls"}}]',
        "multiple_tool_calls",
    ),
    ('name=read\ntool=bash\narguments_json: {"path":"a"}', "ambiguous_alias"),
    ('{"kind":"tool_call","name":"read","arguments":{"path":"a"},"reason":"x"}', "unknown_field"),
    ('{"kind":"final","text":"hi","confidence":1}', "unknown_field"),
    (
        '{"kind":"tool_call","name":"read","tool":"read","arguments":{"path":"a"}}',
        "ambiguous_alias",
    ),
    (
        '{"kind":"tool_call","name":"read","arguments":{"path":"a"},"args":{"path":"a"}}',
        "ambiguous_alias",
    ),
    ('{"name":"read","tool_name":"read","input":{"path":"a"}}', "ambiguous_alias"),
    ('{"kind":"tool_call","name":"read","arguments":""}', "empty_arguments"),
    ('{"kind":"tool_call","name":"read","arguments_json":"   "}', "empty_arguments"),
    ('{"tool_calls":[{"function":{"name":"read","arguments":""}}]}', "empty_arguments"),
    ('{"kind":"tool_call","name":"read","arguments":"{path: a}"}', "invalid_json"),
    ('{"kind":"tool_call","name":"read","arguments":{"path":"a"}', "invalid_json"),
    ('{"kind":"tool_call","name":"read","arguments":"[1,2]"}', "arguments_not_object"),
    ('{"kind":"tool_call","name":"read","arguments":[1]}', "arguments_not_object"),
    ('{"kind":"tool_call","name":"read","arguments":null}', "arguments_not_object"),
    (
        '<dp_tool_call name="bash">{"name":"read","arguments":{"path":"a"}}</dp_tool_call>',
        "name_mismatch",
    ),
    ('<tool_call name="bash">name=read\nargs: {"path":"a"}</tool_call>', "name_mismatch"),
    (
        '{"tool_calls":[{"function":{"name":"read","arguments":"{}"},"extra":1}]}',
        "wrapper_unknown_field",
    ),
    (
        '{"tool_calls":[{"function":{"name":"read","arguments":"{}","strict":true}}]}',
        "wrapper_unknown_field",
    ),
    ('{"function_call":{"name":"read","arguments":"{}","why":"x"}}', "wrapper_unknown_field"),
    ('{"tool_calls":[{"function":{"name":"read","arguments":"{}"}}],"note":"x"}', "unknown_field"),
    ('{"kind":"tool_call","name":"web_fetch","arguments":{"url":"http://x"}}', "unknown_tool"),
    ('{"kind":"tool_call","name":"rm_rf","arguments":{}}', "unknown_tool"),
    ('{"kind":"tool_call","arguments":{"path":"a"}}', "invalid_tool_call"),
    ('{"kind":"tool_call","name":7,"arguments":{}}', "invalid_tool_call"),
    ('{"kind":"tool_call","name":"","arguments":{}}', "invalid_tool_call"),
    ('{"tool_calls":[]}', "invalid_tool_call"),
    (
        '{"tool_calls":[{"type":"retrieval","function":{"name":"read","arguments":"{}"}}]}',
        "invalid_tool_call",
    ),
    ('{"tool_calls":[{"function":{"name":"read"}}]}', "invalid_tool_call"),
    ("<dp_tool_call>just some words</dp_tool_call>", "invalid_tool_call"),
    ('<dp_tool_call>{"path": "a"}</dp_tool_call>', "invalid_tool_call"),
    ('<dp_tool_call name="read"></dp_tool_call>', "empty_arguments"),
    ('<dp_tool_call name="read">{"path": </dp_tool_call>', "invalid_json"),
    ('{"kind":"bash","command":"npm test","timeout":120}', "kind_is_tool_name"),
    ('{"kind":"web_fetch","url":"http://x"}', "invalid_kind"),
    ('{"kind":"answer","text":"x"}', "invalid_kind"),
    ('{"kind":"final","text":42}', "invalid_final"),
    ('{"kind":"tool_call","name":"read","arguments":{"path":""}}', "invalid_arguments"),
    ('{"kind":"tool_call","name":"read","arguments":{"path":"a","mode":"r"}}', "invalid_arguments"),
    ('{"kind":"tool_call","name":"read","arguments":{}}', "invalid_arguments"),
    (
        '{"kind":"tool_call","name":"bash","arguments":{"command":"ls","timeout":0}}',
        "invalid_arguments",
    ),
    ('{"kind":"tool_call","name":"read","arguments":{"path":"a"},', "invalid_json"),
    ('{"kind":"tool_call","name":"read","arguments":{"path":"a\\"b"}} trailing', "invalid_json"),
    ("", "empty_response"),
    ("   \n\t ", "empty_response"),
    ('{"kind":"final","text":"   "}', "empty_response"),
    ('{"tool":"read","path":"a"}', "unknown_field"),
]


@pytest.mark.parametrize(
    ("raw", "code"), FAIL_CLOSED, ids=[f"{c}-{i}" for i, (_, c) in enumerate(FAIL_CLOSED)]
)
def test_fail_closed(raw: str, code: str) -> None:
    out = verdict(raw)
    assert out == {"ok": False, "error": code, "repairable": True}


FIREWALL = [
    'Here you go: {"kind":"tool_call","name":"read","arguments":{"path":"a"}}',
    '{"kind":"final","text":"{\\"kind\\":\\"tool_call\\",\\"name\\":\\"read\\",\\"arguments\\":{}}"}',
    'Result:\n{"id":"dp_tool_123","name":"anything","arguments":{}}',
    'Plan: {"name":"read","arguments":{"path":"x"}}',
    '[{"name":"read","arguments":{"path":"a"}}]',
    'I will do {"tool_calls":[{"function":{"name":"read","arguments":"{}"}}]}',
    'Calling {"function_call":{"name":"read","arguments":{}}} now',
    'read({"path": "a"})',
    'Sure.\nbash({"command": "ls"})',
    '{"kind":"final","text":"ok {\\"name\\":\\"web_fetch\\",\\"args\\":{}}"}',
]


@pytest.mark.parametrize("raw", FIREWALL)
def test_final_firewall_catches_disguised_calls(raw: str) -> None:
    assert verdict(raw) == {"ok": False, "error": "tool_call_like_final", "repairable": True}


MARKUP = [
    "Done. <dp_tool_result>\ncontent: x",
    'Answer <dp_tool_call name="read"',
    "text </DP_TOOL_CALL> more",
    "a [previous_dp_tool_call] b",
    "<dp_tool_call_history>x",
    "prefix <tool_call name=read and no close",
    "[previous_dp_tool_call]name=read[/previous_dp_tool_call]",
    "<previous_dp_tool_call>x</previous_dp_tool_call>   ",
]


@pytest.mark.parametrize("raw", MARKUP)
def test_raw_markup_in_final_fails_closed(raw: str) -> None:
    assert verdict(raw) == {"ok": False, "error": "raw_protocol_markup", "repairable": True}


BUSINESS = [
    '{"name":"Alice","arguments":["a","b"]}',
    '{"kind":"final","text":"{\\"name\\":\\"Alice\\",\\"arguments\\":{\\"x\\":1}}"}',
    'The config is {"name": "deskpilot", "args": ["--fast"]}.',
    '[{"name":"ann","input":3},{"name":"bob","input":4}]',
    '{"result": 42, "status": "ok"}',
    "Use `README.md` for details; read it before running.",
    "The function f(x) returns 2.",
]


@pytest.mark.parametrize("raw", BUSINESS)
def test_business_json_and_prose_pass_the_firewall(raw: str) -> None:
    out = verdict(raw)
    assert out["ok"] is True and out["kind"] == "final"


def test_malformed_final_recovers_text_only() -> None:
    raw = '{"kind":"final","text":"他说"洗护发"很好, and "ok"\nline two"}'
    assert verdict(raw) == {
        "ok": True,
        "kind": "final",
        "text": '他说"洗护发"很好, and "ok"\nline two',
    }
    reordered = '{"text":"a "b" c","kind":"final"}'
    assert verdict(reordered)["text"] == 'a "b" c'


def test_malformed_tool_call_is_never_recovered() -> None:
    raw = '{"kind":"tool_call","name":"read","arguments":{"path":"a"b"}}'
    assert verdict(raw)["error"] == "invalid_json"


def test_history_blocks_are_stripped_before_judging() -> None:
    raw = "Here is the answer: 42.\n[previous_dp_tool_call]name=read\n[/previous_dp_tool_call]"
    assert verdict(raw) == {"ok": True, "kind": "final", "text": "Here is the answer: 42."}


def test_native_tool_calls_reprojected_and_validated() -> None:
    good = [
        {
            "id": "c",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path":"package.json"}'},
        }
    ]
    out = evaluate("", selected=SELECTED, tools=BY_NAME, native_tool_calls=good)
    assert out.to_json() == EXPECTED_CALL and out.form == "native_openai_tool_calls"
    bad = [{"id": "c", "type": "function", "function": {"name": "read", "arguments": "{oops"}}]
    assert (
        evaluate("", selected=SELECTED, tools=BY_NAME, native_tool_calls=bad).code == "invalid_json"
    )
    empty = [{"id": "c", "type": "function", "function": {"name": "read", "arguments": ""}}]
    assert (
        evaluate("", selected=SELECTED, tools=BY_NAME, native_tool_calls=empty).code
        == "empty_arguments"
    )
    hidden = [{"id": "c", "type": "function", "function": {"name": "web_fetch", "arguments": "{}"}}]
    assert (
        evaluate("", selected=SELECTED, tools=BY_NAME, native_tool_calls=hidden).code
        == "unknown_tool"
    )


# Property: whatever the text, parsing returns an outcome and never yields a call to a tool
# that was not selected.
@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    outcome = parse_output(text, SELECTED, BY_NAME.keys())
    assert isinstance(outcome, ToolCallCandidate | FinalCandidate | ParseFailure)
    out = evaluate(text, selected=SELECTED, tools=BY_NAME)
    if out.kind == "tool_call":
        assert out.name in SELECTED


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "kind",
                    "name",
                    "tool",
                    "arguments",
                    "args",
                    "text",
                    "id",
                    "function",
                    "tool_calls",
                    "x",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_arbitrary_json_only_ever_executes_selected_valid_calls(value: object) -> None:
    out = evaluate(json.dumps(value), selected=SELECTED, tools=BY_NAME)
    if out.kind == "tool_call":
        assert out.name in SELECTED
        assert isinstance(out.arguments, dict)
