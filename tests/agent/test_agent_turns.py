"""User tasks as the person drives them: plan mode and its acceptance, a continuation turn,
and an image request when no vision tool can be offered (no desktop needed)."""

from __future__ import annotations

from agent_policies import Steps, last_text
from agent_rig import AgentRig
from scripted_model import Request, ScriptedModel, call, final

from deskpilot.agent.bash import BashTool
from deskpilot.agent.files import ReadTool
from deskpilot.agent.loop import ACCEPT_PLAN, Agent

PLAN = "<proposed_plan>\n1. Read notes.txt\n2. Count its lines with bash\n</proposed_plan>"


async def test_plan_mode_offers_only_reads_and_its_plan_is_then_implemented(
    rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    (rig.cwd / "notes.txt").write_text("one\ntwo\n")
    rig.agent.toggle_plan()
    scripted_model.set_policy(Steps([call("read", path="notes.txt"), final(PLAN)]))
    planned = await rig.agent.run_turn("Plan how to count the lines of notes.txt.")
    assert planned.status == "planned" and planned.text == PLAN
    offered = scripted_model.request(0).tools()
    assert "read" in offered and "get_app_state" in offered
    assert not {"bash", "click", "type_text", "open_app"} & set(offered), offered
    assert "Plan mode is active" in scripted_model.request(0).system

    rig.agent.toggle_plan()
    scripted_model.set_policy(
        Steps([call("bash", command="wc -l < notes.txt"), lambda r: final(last_text(r))])
    )
    done = await rig.agent.run_turn("go ahead")
    assert done.status == "answered"
    request = scripted_model.request(2)
    assert request.user_texts[-1].startswith(ACCEPT_PLAN) or ACCEPT_PLAN in request.user_texts[-2]
    assert "bash" in request.tools() and "Plan mode is active" not in request.system
    assert done.text is not None and "2" in done.text


async def test_plan_mode_falls_back_to_a_local_plan(
    rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    rig.agent.toggle_plan()
    scripted_model.set_policy(lambda r: final("I would read the file and count."))
    report = await rig.agent.run_turn("Plan the cleanup of the build directory.")
    assert report.status == "planned"
    assert report.text is not None and "<proposed_plan>" in report.text
    assert "local fallback" in report.text
    assert any(e.body.get("code") == "plan_fallback" for e in rig.events.of("notice"))


async def test_continue_carries_the_previous_intent(
    rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    (rig.cwd / "todo.txt").write_text("water the plants\nfeed the cat\n")
    scripted_model.set_policy(
        Steps([call("read", path="todo.txt"), final("The first item is: water the plants.")])
    )
    first = await rig.agent.run_turn("Read todo.txt and tell me the first item.")
    assert first.status == "answered"

    def second(request: Request) -> dict[str, object]:
        history = "\n".join(request.user_texts)
        if "Read todo.txt" not in history or "继续" not in request.user_texts[-1]:
            return final("the earlier task is not in the request")
        return final("The second item is: feed the cat.")

    scripted_model.set_policy(Steps([final("好的"), second]))
    report = await rig.agent.run_turn("继续")
    assert report.status == "answered" and report.text == "The second item is: feed the cat."
    assert any(e.body.get("code") == "premature_final" for e in rig.events.of("recovery"))
    # a new user task: a new turn id
    turns = [e.body["turnId"] for e in rig.events.of("turn_start")]
    assert len(set(turns)) == 2


async def test_an_image_request_without_a_vision_tool_sends_nothing_to_the_model(
    rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    agent = Agent(
        rig.agent.model,
        rig.agent.desktop,
        cwd=rig.cwd,
        sink=rig.events,
        local_tools=[ReadTool(), BashTool()],
    )
    (rig.cwd / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    before = scripted_model.calls
    report = await agent.run_turn("What does the screenshot chart.png show?")
    assert report.status == "failed" and report.code == "vision_unavailable"
    assert report.message is not None and "tesseract-ocr" in report.message
    assert scripted_model.calls == before


async def test_a_model_that_says_it_cannot_see_is_repaired_into_vision_read(
    rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    if "vision_read" not in rig.agent.local:
        import pytest

        pytest.skip("no OCR on this machine (tesseract-ocr) and no vision model configured")
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (640, 200), "white")
    font = ImageFont.load_default(size=40)
    ImageDraw.Draw(img).text((30, 70), "INVOICE 4711", fill="black", font=font)
    img.save(rig.cwd / "scan.png")
    scripted_model.set_policy(
        Steps(
            [
                final("I'm a text-only model, so I cannot see images."),
                lambda r: (
                    call("vision_read", path="scan.png")
                    if "vision_read" in r.user_texts[-1]
                    else final("no repair came")
                ),
                lambda r: final(f"It reads: {last_text(r)}"),
            ]
        )
    )
    report = await rig.agent.run_turn("Read the image scan.png and tell me what it says.")
    assert report.status == "answered", (report.code, report.message)
    assert report.text is not None and "4711" in report.text
    assert any(e.body.get("code") == "vision_refusal" for e in rig.events.of("recovery"))
