"""The scripted decision model itself: a real HTTP server, and policies that read real trees.

The policies are tested on state text deskpilot really produced for real apps (zenity forms,
gnome-calculator, mousepad on the private desktop), wrapped into chat messages by the
provider's own serialiser, so the parser reads exactly what the operator will send. Expected
element ids are looked up in the same text with plain regexes, independent of the parser.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import httpx
import pytest
from scripted_model import (
    RAW,
    Calculator,
    FormFiller,
    Garbage,
    GiveUp,
    Handoff,
    Noop,
    Request,
    Scripted,
    ScriptedModel,
    Typist,
    action,
    batch,
    call,
    final,
    garbage,
    parse_elements,
)

from deskpilot.desktop.apps import App
from deskpilot.provider import (
    ChatMessage,
    Provider,
    ProviderConfig,
    RuntimePolicy,
    ToolCall,
    ToolSpec,
)
from deskpilot.provider.protocol.content import serialise
from deskpilot.provider.protocol.prompt import build_payload, system_prompt

STATE_RESULT_CHARS = 64_000
STATE_HISTORY_CHARS = 200_000
OPERATOR_INSTRUCTIONS = "You operate one desktop window for a person. Decide the next action."
TEST_KEY = "sk-test-0123456789abcdefSECRET"

# ----------------------------------------------------------------------------- decision tools

_ID = {"type": "integer", "minimum": 1}
_OBJ = {"type": "object", "additionalProperties": False}
ATOMIC: dict[str, dict[str, Any]] = {
    "click": {
        **_OBJ,
        "properties": {
            "element_id": _ID,
            "x": {"type": "number"},
            "y": {"type": "number"},
            "button": {"enum": ["left", "right", "middle"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 3},
        },
    },
    "type_text": {
        **_OBJ,
        "properties": {
            "text": {"type": "string"},
            "element_id": _ID,
            "submit": {"type": "boolean"},
        },
        "required": ["text"],
    },
    "set_value": {
        **_OBJ,
        "properties": {"element_id": _ID, "value": {"type": "string"}},
        "required": ["element_id", "value"],
    },
    "press_key": {
        **_OBJ,
        "properties": {"keys": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        "required": ["keys"],
    },
}
LOOP: dict[str, dict[str, Any]] = {
    "ready_for_verification": {**_OBJ, "properties": {}},
    "need_handoff": {**_OBJ, "properties": {"reason": {"type": "string"}}, "required": ["reason"]},
    "give_up": {**_OBJ, "properties": {"reason": {"type": "string"}}, "required": ["reason"]},
}
ACT_BATCH = {
    **_OBJ,
    "properties": {
        "actions": {
            "type": "array",
            "minItems": 2,
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {"name": {"enum": list(ATOMIC)}, "arguments": {"type": "object"}},
                "required": ["name", "arguments"],
            },
        }
    },
    "required": ["actions"],
}


def decision_tools(batching: bool) -> list[ToolSpec]:
    tools = [ToolSpec(n, f"The {n} action.", p) for n, p in ATOMIC.items()]
    if batching:
        tools.append(ToolSpec("act_batch", "Run 2-8 atomic actions in order.", ACT_BATCH))
    tools += [ToolSpec(n, f"The loop's {n}.", p) for n, p in LOOP.items()]
    return tools


def chat_body(
    goal: str, results: list[tuple[str, str, bool]], *, batching: bool = True
) -> dict[str, Any]:
    """The body the provider would POST: operator instructions + protocol prompt, the goal,
    and each (tool name, text, is_error) as a tool result, serialised by the provider."""
    msgs = [ChatMessage.system(OPERATOR_INSTRUCTIONS), ChatMessage.user(f"Goal: {goal}")]
    for name, text, is_error in results:
        msgs.append(ChatMessage.tool_result(ToolCall(name, {}), text, is_error=is_error))
    chat = serialise(
        msgs,
        system_prompt(decision_tools(batching)),
        max_result_chars=STATE_RESULT_CHARS,
        max_history_chars=STATE_HISTORY_CHARS,
    )
    return build_payload("scripted", chat, max_tokens=1024, json_object_hint=True, temperature=None)


def request_of(
    goal: str, results: list[tuple[str, str, bool]], *, batching: bool = True
) -> Request:
    return Request(chat_body(goal, results, batching=batching))


def id_of(text: str, pattern: str) -> int:
    """The id of the one tree line matching ``pattern`` (a plain regex, not the parser)."""
    ids = [
        int(m.group(1))
        for line in text.splitlines()
        if re.search(pattern, line) and (m := re.search(r"\[(\d+)\]$", line))
    ]
    assert len(ids) == 1, (pattern, ids, text)
    return ids[0]


# ----------------------------------------------------------------------------- the server


def test_server_answers_a_real_post_with_a_completion(scripted_model: ScriptedModel) -> None:
    reply = call("click", element_id=8)
    scripted_model.set_policy(lambda request: reply)
    body = chat_body("Press OK", [("get_app_state", '- button "OK" [8]', False)])
    r = httpx.post(
        scripted_model.base_url + "/chat/completions",
        json=body,
        headers={"authorization": "Bearer x"},
        timeout=10,
    )
    assert r.status_code == 200
    data = r.json()
    assert data["object"] == "chat.completion"
    assert data["choices"][0]["finish_reason"] == "stop"
    message = data["choices"][0]["message"]
    assert message["role"] == "assistant" and "tool_calls" not in message
    assert json.loads(message["content"]) == {
        "kind": "tool_call",
        "name": "click",
        "arguments": {"element_id": 8},
    }
    assert scripted_model.calls == 1
    assert scripted_model.requests == [body]
    assert scripted_model.replies == [reply]
    assert scripted_model.recorded[0].headers["authorization"] == "Bearer x"
    assert scripted_model.base_url.startswith("http://127.0.0.1:")
    assert scripted_model.base_url.endswith("/v1")
    models = httpx.get(scripted_model.base_url + "/models", timeout=10).json()
    assert models["data"][0]["id"] == scripted_model.model_id
    assert scripted_model.calls == 1  # a GET is not a chat call
    assert httpx.post(scripted_model.base_url + "/embeddings", json={}).status_code == 404


def test_reply_helpers_and_raw_content(scripted_model: ScriptedModel) -> None:
    replies = [
        final("done"),
        garbage("not json at all"),
        batch([action("click", element_id=3), call("type_text", text="a")]),
        "raw string",
    ]
    scripted_model.set_policy(Scripted(replies))
    contents = []
    for _ in range(5):
        r = httpx.post(scripted_model.base_url + "/chat/completions", json={"messages": []})
        contents.append(r.json()["choices"][0]["message"]["content"])
    assert json.loads(contents[0]) == {"kind": "final", "text": "done"}
    assert contents[1] == "not json at all"
    with pytest.raises(ValueError):
        json.loads(contents[1])
    assert json.loads(contents[2]) == {
        "kind": "tool_call",
        "name": "act_batch",
        "arguments": {
            "actions": [
                {"name": "click", "arguments": {"element_id": 3}},
                {"name": "type_text", "arguments": {"text": "a"}},
            ]
        },
    }
    assert contents[3] == "raw string"
    assert json.loads(contents[4]) == {"kind": "final", "text": "scripted replies exhausted"}
    assert scripted_model.calls == 5
    assert garbage("x") == {RAW: "x"}


def test_delay_http_errors_and_policy_errors() -> None:
    with ScriptedModel(lambda r: final(f"request {r.index}"), delay=0.3) as model:
        t0 = time.monotonic()
        r = httpx.post(model.base_url + "/chat/completions", json={"messages": []}, timeout=10)
        assert time.monotonic() - t0 >= 0.3
        assert json.loads(r.json()["choices"][0]["message"]["content"])["text"] == "request 0"
        model.delay = 0.0
        model.fail_next(503, count=2)
        codes = [
            httpx.post(model.base_url + "/chat/completions", json={}).status_code for _ in range(3)
        ]
        assert codes == [503, 503, 200]
        assert model.calls == 4

        def broken(request: Request) -> dict[str, Any]:
            raise RuntimeError("boom")

        model.set_policy(broken)
        r = httpx.post(model.base_url + "/chat/completions", json={})
        assert (
            "scripted policy error"
            in json.loads(r.json()["choices"][0]["message"]["content"])["text"]
        )
        assert len(model.errors) == 1 and "boom" in model.errors[0]


def test_concurrent_requests_are_all_recorded(scripted_model: ScriptedModel) -> None:
    scripted_model.set_policy(lambda r: final("ok"))
    scripted_model.delay = 0.05

    async def many() -> list[int]:
        async with httpx.AsyncClient(timeout=10) as client:
            url = scripted_model.base_url + "/chat/completions"
            rs = await asyncio.gather(
                *(client.post(url, json={"messages": [], "n": i}) for i in range(20))
            )
            return [r.status_code for r in rs]

    assert asyncio.run(many()) == [200] * 20
    assert sorted(b["n"] for b in scripted_model.requests) == list(range(20))


def _fast_policy() -> RuntimePolicy:
    return RuntimePolicy.for_profile(
        "reliability",
        per_attempt_timeout_ms=3000,
        total_deadline_ms=10000,
        retry_delay_ms=10,
        retry_max_delay_ms=40,
        retry_jitter_ms=5,
        retry_after_max_ms=500,
    )


async def test_the_real_provider_gets_a_decision_and_the_view_reads_its_request(
    scripted_model: ScriptedModel,
) -> None:
    tree = 'App=(name="x", pid=1)\nstate_id=st_a\n\n- dialog "T" [1]\n  - button "OK" [2]'
    scripted_model.set_policy(lambda r: call("click", element_id=r.find("button", "OK")[0].id))
    config = ProviderConfig(
        base_url=scripted_model.base_url,
        model="scripted",
        api_key=TEST_KEY,
        policy=_fast_policy(),
    )
    messages = [
        ChatMessage.system(OPERATOR_INSTRUCTIONS),
        ChatMessage.user("Goal: press OK in the dialog"),
        ChatMessage.tool_result(ToolCall("get_app_state", {"app": "x"}), tree),
    ]
    async with Provider(config) as provider:
        result = await provider.decide(messages, decision_tools(batching=False))
    assert result.kind == "tool_call", result.to_dict()
    assert result.tool_call is not None
    assert (result.tool_call.name, dict(result.tool_call.arguments)) == ("click", {"element_id": 2})
    req = scripted_model.request(0)
    assert req.body["stream"] is False
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.goal == "press OK in the dialog"
    assert "act_batch" not in req.tools() and not req.batching
    assert {"click", "type_text", "ready_for_verification", "give_up"} <= set(req.tools())
    assert req.tool_schema("give_up") == LOOP["give_up"]
    [res] = req.results()
    assert (res.name, res.is_error) == ("get_app_state", False)
    assert req.last_state() == tree
    assert req.state_id() == "st_a"


@pytest.mark.parametrize("text", [Garbage.BROKEN_JSON, Garbage.PSEUDO_CALL])
async def test_garbage_runs_the_real_providers_repair_budget_out(
    scripted_model: ScriptedModel, text: str
) -> None:
    scripted_model.set_policy(Garbage(text))
    config = ProviderConfig(
        base_url=scripted_model.base_url, model="scripted", api_key=TEST_KEY, policy=_fast_policy()
    )
    async with Provider(config) as provider:
        result = await provider.decide(
            [ChatMessage.user("Goal: anything")], decision_tools(batching=True)
        )
    assert result.kind == "error", result.to_dict()
    assert result.error is not None and result.error.code == "recovery_exhausted"
    expected = "invalid_json" if text == Garbage.BROKEN_JSON else "tool_call_like_final"
    assert expected in str(result.error), result.to_dict()
    assert scripted_model.calls == result.requests > 1
    assert all(c == {RAW: text} for c in scripted_model.replies)
    # the repair prompt the provider sent is visible in the next request
    assert "dp_repair" in json.dumps(scripted_model.requests[-1]["messages"])


async def test_prose_is_a_final_answer_to_the_real_provider(
    scripted_model: ScriptedModel,
) -> None:
    scripted_model.set_policy(Garbage(Garbage.PROSE))
    config = ProviderConfig(
        base_url=scripted_model.base_url, model="scripted", api_key=TEST_KEY, policy=_fast_policy()
    )
    async with Provider(config) as provider:
        result = await provider.decide(
            [ChatMessage.user("Goal: anything")], decision_tools(batching=True)
        )
    assert (result.kind, result.text, scripted_model.calls) == ("final", Garbage.PROSE, 1)


# ----------------------------------------------------------------------------- parsing


def test_element_lines_escapes_parents_states_and_actions() -> None:
    tree = "\n".join(
        [
            'App=(name="a", pid=1)',
            'Window=(title="*x \\"y\\" - Ed", id=0x1)',
            "state_id=st_1",
            "",
            '- window "W [1]" [1]',
            '  - textField "Say \\"hi\\"" = "a\\nb\\\\c\\u2028" [focused] [readonly] [2]',
            "  - list [3]",
            '    - listItem "x" [selected] [actions: expand, "activate"] [4]',
            "    - … 12 more items",
            '  - button "Pi [Ctrl+P]" [5]',
            '    - label "π" [6]',
            "[truncated: 3 elements omitted]",
        ]
    )
    els = parse_elements(tree)
    assert [e.id for e in els] == [1, 2, 3, 4, 5, 6]
    assert els[0].name == "W [1]" and els[0].parent is None
    field = els[1]
    assert field.name == 'Say "hi"' and field.value == "a\nb\\c\u2028"
    assert field.states == ("focused", "readonly") and field.parent == 1
    assert els[2].value is None and els[2].name == ""
    assert els[3].parent == 3 and els[3].states == ("selected",) and els[3].depth == 2
    assert els[3].actions == ("expand", '"activate"')
    assert els[4].name == "Pi [Ctrl+P]" and els[5].parent == 5
    req = request_of("g", [("get_app_state", tree, False)])
    assert req.window_title() == '*x "y" - Ed'
    assert [e.id for e in req.find(role="label")] == [6]
    assert [e.id for e in req.find(name_contains="[Ctrl")] == [5]


def test_last_state_is_the_newest_tree_and_the_last_state_of_a_batch_result() -> None:
    one = 'App=(name="a", pid=1)\nstate_id=st_1\n\n- button "A" [1]'
    two = 'App=(name="a", pid=1)\nstate_id=st_2\n\n- button "B" [1]'
    three = 'App=(name="a", pid=1)\nstate_id=st_3\n\n- button "C" [1]'
    req = request_of(
        "g",
        [
            ("get_app_state", one, False),
            ("act_batch", f"click: ok\n{two}\n\nclick: ok\n{three}", False),
            ("click", "the window could not be observed afterwards", False),
        ],
    )
    assert req.last_state() == three
    assert req.state_id() == "st_3"
    assert [s.split("\n")[1] for s in req.states()] == ["state_id=st_1", "state_id=st_3"]
    assert not req.latest_has_tree()
    assert [(r.name, r.is_error) for r in req.results()] == [
        ("get_app_state", False),
        ("act_batch", False),
        ("click", False),
    ]
    assert request_of("g", [("click", "refused", True)]).results()[0].is_error


def test_loop_policies_and_scripted_replays() -> None:
    req = request_of("g", [("get_app_state", '- dialog "T" [1]\n  - label "Hi" [2]', False)])
    assert GiveUp("no way")(req) == call("give_up", reason="no way")
    assert Handoff("needs a password")(req) == call("need_handoff", reason="needs a password")
    assert Garbage("prose")(req) == {RAW: "prose"}
    assert Noop()(req) == call("click", element_id=2)
    script = Scripted([call("click", element_id=1), lambda r: final(r.goal or "")], then=final("x"))
    assert [script(req) for _ in range(4)] == [
        call("click", element_id=1),
        final("g"),
        final("x"),
        final("x"),
    ]


def test_calculator_needs_the_history_when_the_result_is_a_prefix() -> None:
    # 4*1 = 4: a display of "4" is the first key, not the result, until the history shows it
    head = 'App=(name="c", pid=1)\nstate_id=st_1\n\n- window "Calculator" [1]\n'
    keys = '  - button "4 4" [3]\n  - button "× ×" [4]\n  - button "1 1" [5]\n  - button "= =" [6]'
    typed = request_of("g", [("s", head + '  - textField = "4" [focused] [2]\n' + keys, False)])
    assert Calculator("4*1")(typed) == batch([action("click", element_id=i) for i in (4, 5, 6)])
    history = '  - list [7]\n    - listItem [8]\n      - label "4×1" [9]\n      - label "4" [10]\n'
    done = request_of(
        "g", [("s", head + history + '  - textField = "4" [focused] [2]\n' + keys, False)]
    )
    assert Calculator("4*1")(done) == call("ready_for_verification")


# ----------------------------------------------------------------------------- real trees


async def observe(runtime: Any, app: App, ready: str, timeout: float = 20.0) -> str:
    """get_app_state until the tree shows a line matching ``ready`` (the window settles)."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        out = await runtime.call("get_app_state", {"app": app.pid})
        text = out.text
        if not out.is_error and any(re.search(ready, line) for line in text.splitlines()):
            return text
        await asyncio.sleep(0.3)
    raise AssertionError(f"the state never showed {ready!r}: {text}")


def state_id_of(text: str) -> str:
    m = re.search(r"^state_id=(\S+)$", text, re.M)
    assert m, text
    return m.group(1)


async def drive(
    runtime: Any, policy: Any, goal: str, first: str, *, batching: bool, steps: int = 12
) -> tuple[list[dict[str, Any]], Request]:
    """A minimal operator: ask the policy, act through the runtime on the newest state_id,
    feed the result back as a tool result; until a loop decision. Returns the decisions."""
    results: list[tuple[str, str, bool]] = [("get_app_state", first, False)]
    decisions: list[dict[str, Any]] = []
    for _ in range(steps):
        req = request_of(goal, results, batching=batching)
        decision = policy(req)
        decisions.append(decision)
        if decision.get("kind") != "tool_call" or decision["name"] in LOOP:
            return decisions, req
        if decision["name"] == "act_batch":
            assert batching, decision
            todo = decision["arguments"]["actions"]
            assert 2 <= len(todo) <= 8, decision
        else:
            todo = [decision]
        texts, failed = [], False
        for item in todo:
            sid = req.state_id(texts[-1]) if texts and "state_id=" in texts[-1] else None
            out = await runtime.call(
                item["name"], {**item["arguments"], "state_id": sid or req.state_id()}
            )
            texts.append(out.text)
            if out.is_error or "state_id=" not in out.text:
                failed = out.is_error
                break
        # one line per action, then the last action's own text (its state, if any): the
        # newest state is what the result ends with
        summary = [f"{i + 1}. {t.splitlines()[0]}" for i, t in enumerate(texts)]
        results.append((decision["name"], "\n".join(summary) + "\n\n" + texts[-1], failed))
    raise AssertionError(f"no loop decision after {steps} steps: {decisions}")


@pytest.mark.desktop
async def test_form_filler_batches_the_whole_real_zenity_form(
    runtime: Any, zenity_form: App
) -> None:
    text = await observe(runtime, zenity_form, r'^\s*- button "OK"')
    name = id_of(text, r'^\s*- textField "Name"')
    city = id_of(text, r'^\s*- textField "City"')
    ok = id_of(text, r'^\s*- button "OK"')
    assert len({name, city, ok}) == 3
    policy = FormFiller({"Name": "Ada", "City": "Paris"})
    req = request_of("Fill in the contact form", [("get_app_state", text, False)])
    assert req.batching
    assert policy(req) == batch(
        [
            action("type_text", element_id=name, text="Ada"),
            action("type_text", element_id=city, text="Paris"),
            action("click", element_id=ok),
        ]
    )
    # without batches: one action per request, the first field first
    single = request_of(
        "Fill in the contact form", [("get_app_state", text, False)], batching=False
    )
    assert not single.batching
    assert policy(single) == call("type_text", element_id=name, text="Ada")
    # the label lines the fields are named after are in the same tree
    assert id_of(text, r'^\s*- label "Name"') not in (name, city, ok)


@pytest.mark.desktop
async def test_form_filler_continues_where_a_partial_batch_stopped(
    runtime: Any, zenity_form: App
) -> None:
    text = await observe(runtime, zenity_form, r'^\s*- button "OK"')
    name = id_of(text, r'^\s*- textField "Name"')
    typed = await runtime.call(
        "type_text", {"state_id": state_id_of(text), "element_id": name, "text": "Ada"}
    )
    assert not typed.is_error, typed.text
    assert re.search(r'textField "Name" = "Ada"', typed.text), typed.text
    req = request_of(
        "Fill in the contact form",
        [("get_app_state", text, False), ("act_batch", typed.text, True)],
    )
    decision = FormFiller({"Name": "Ada", "City": "Paris"})(req)
    assert decision == batch(
        [
            action("type_text", element_id=id_of(typed.text, r'textField "City"'), text="Paris"),
            action("click", element_id=id_of(typed.text, r'button "OK"')),
        ]
    )
    # a field holding other text is replaced, not appended to
    wrong = FormFiller({"Name": "Bob", "City": "Paris"})(req)
    assert wrong["arguments"]["actions"][0] == action("set_value", element_id=name, value="Bob")


@pytest.mark.desktop
@pytest.mark.parametrize("batching", [True, False], ids=["batch", "single"])
async def test_form_filler_submits_the_real_dialog(
    runtime: Any, zenity_form: App, batching: bool
) -> None:
    text = await observe(runtime, zenity_form, r'^\s*- button "OK"')
    decisions, last = await drive(
        runtime,
        FormFiller({"Name": "Ada", "City": "Paris"}),
        "Fill in the contact form",
        text,
        batching=batching,
    )
    assert decisions[-1] == call("ready_for_verification"), decisions
    assert len(decisions) == (2 if batching else 4), decisions
    out, _ = await asyncio.to_thread(zenity_form.proc.communicate, timeout=10)
    assert out == b"Ada|Paris\n"
    assert not last.latest_has_tree()


@pytest.mark.desktop
async def test_calculator_clicks_the_real_buttons(runtime: Any, calculator: App) -> None:
    text = await observe(runtime, calculator, r'^\s*- button "= ="')
    ids = [id_of(text, rf'^\s*- button "{label}"') for label in ("7 7", "× ×", "6 6", "= =")]
    req = request_of("Compute 7 × 6", [("get_app_state", text, False)])
    assert Calculator("7*6")(req) == batch([action("click", element_id=i) for i in ids])
    single = request_of("Compute 7 × 6", [("get_app_state", text, False)], batching=False)
    assert Calculator("7*6")(single) == call("click", element_id=ids[0])
    # the display is the editable text field, not the read-only one
    display = id_of(text, r'^\s*- textField = "[^"]*" \[focused\]')
    assert Calculator.display(parse_elements(text)).id == display  # type: ignore[union-attr]


@pytest.mark.desktop
@pytest.mark.parametrize("batching", [True, False], ids=["batch", "single"])
async def test_calculator_computes_on_the_real_app(
    runtime: Any, calculator: App, batching: bool
) -> None:
    text = await observe(runtime, calculator, r'^\s*- button "= ="')
    decisions, last = await drive(
        runtime, Calculator("7*6"), "Compute 7 × 6", text, batching=batching
    )
    assert decisions[-1] == call("ready_for_verification"), decisions
    assert len(decisions) == (2 if batching else 5), decisions
    state = last.last_state()
    assert state is not None
    assert re.search(r'^\s*- textField = "42" \[focused\]', state, re.M), state
    assert re.search(r'^\s*- label "7×6"', state, re.M), state


@pytest.mark.desktop
async def test_noop_clicks_nothing_that_acts(
    runtime: Any, zenity_form: App, calculator: App
) -> None:
    form = await observe(runtime, zenity_form, r'^\s*- button "OK"')
    d = Noop()(request_of("g", [("get_app_state", form, False)]))
    labels = {id_of(form, r'^\s*- label "Name"'), id_of(form, r'^\s*- label "City"')}
    assert d["name"] == "click" and d["arguments"]["element_id"] in labels
    calc = await observe(runtime, calculator, r'^\s*- button "= ="')
    d = Noop()(request_of("g", [("get_app_state", calc, False)]))
    # the calculator's only labels sit inside buttons (π in "Pi [Ctrl+P]"): not those
    assert d != call("click", element_id=id_of(calc, r'^\s*- label "π"'))
    assert d == call("click", x=1, y=1)


@pytest.mark.desktop
async def test_typist_types_and_saves_in_real_mousepad(
    runtime: Any, mousepad: App, text_file: Any
) -> None:
    text = await observe(runtime, mousepad, r"^\s*- textField")
    doc = id_of(text, r"^\s*- textField")
    words = "hello from the operator\nsecond line"
    req = request_of("Write the note and save it", [("get_app_state", text, False)])
    assert Typist(words)(req) == batch(
        [action("type_text", element_id=doc, text=words), action("press_key", keys=["ctrl+s"])]
    )
    single = request_of("g", [("get_app_state", text, False)], batching=False)
    assert Typist(words)(single) == call("type_text", element_id=doc, text=words)
    assert Typist(words, save=False)(req) == call("type_text", element_id=doc, text=words)
    decisions, last = await drive(runtime, Typist(words), "Write and save", text, batching=False)
    assert [d["name"] for d in decisions] == ["type_text", "press_key", "ready_for_verification"]
    assert text_file.read_text() == words
    title = last.window_title()
    assert title is not None and not title.startswith("*") and text_file.name in title
