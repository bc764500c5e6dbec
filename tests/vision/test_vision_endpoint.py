"""The multimodal endpoint against a real loopback server: what is sent, what comes back,
and that every failure is a typed error with no OCR answer in its place."""

from __future__ import annotations

import base64
import functools
import io
import re
import socket
import time

import pytest
from PIL import Image, ImageDraw
from vision_images import draw_text, png
from vision_server import Step, answer, endpoint

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision import OcrEngine, VisionConfig, ask_vision_model, read_image

KEY = "sk-test-4f1c9a-secret"


@functools.cache
def _screenshot(width: int = 2400, height: int = 1500) -> bytes:
    img = Image.new("RGB", (width, height), (240, 240, 240))
    draw_text(ImageDraw.Draw(img), (100, 100), "Invoice 4711", size=40)
    return png(img)


def _config(url: str, **kw: object) -> VisionConfig:
    return VisionConfig(base_url=url, model="vision-test-1", api_key=KEY, **kw)  # type: ignore[arg-type]


async def test_sends_question_and_jpeg_and_returns_evidence() -> None:
    with endpoint(answer("The window shows Invoice 4711 at the top left.")) as ep:
        result = await ask_vision_model(_config(ep.url), _screenshot(), "What invoice is open?")
    assert len(ep.received) == 1
    req = ep.received[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert req.body["model"] == "vision-test-1"
    (message,) = req.body["messages"]
    assert message["role"] == "user"
    text_part, image_part = message["content"]
    assert text_part == {"type": "text", "text": "What invoice is open?"}
    assert image_part["type"] == "image_url"
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert sent.format == "JPEG"
    assert sent.size == (1600, 1000)  # long edge 1,600, aspect kept

    assert (result.width, result.height, result.sent_width, result.sent_height) == (
        2400,
        1500,
        1600,
        1000,
    )
    evidence = result.evidence()
    first = evidence.splitlines()[0]
    assert re.fullmatch(
        r"VISION_READ_OK source=model model=vision-test-1 image=2400x1500 sent=1600x1000 "
        r"scale=0\.6667 elapsedMs=\d+",
        first,
    )
    assert evidence.endswith("The window shows Invoice 4711 at the top left.")
    assert KEY not in evidence


async def test_a_small_frame_is_not_enlarged_and_content_parts_are_joined() -> None:
    parts = [{"type": "text", "text": "Line one."}, {"type": "text", "text": "Line two."}]
    with endpoint(answer(parts)) as ep:
        result = await ask_vision_model(_config(ep.url), _screenshot(800, 500), "Read it")
    url = ep.received[0].body["messages"][0]["content"][1]["image_url"]["url"]
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size == (800, 500)
    assert result.answer == "Line one.\nLine two."
    assert result.scale == 1.0


async def test_one_retry_after_a_5xx() -> None:
    with endpoint(Step(status=503, json_body={"error": "busy"}), answer("ok")) as ep:
        result = await ask_vision_model(_config(ep.url), _screenshot(), "q")
    assert result.answer == "ok"
    assert len(ep.received) == 2


async def test_two_5xx_is_a_typed_error() -> None:
    fail = Step(status=500, json_body={"error": {"message": "internal"}})
    with endpoint(fail, fail, answer("never")) as ep, pytest.raises(DeskpilotError) as caught:
        await ask_vision_model(_config(ep.url), _screenshot(), "q")
    err = caught.value
    assert err.code is ErrorCode.VISION_UNAVAILABLE
    assert err.details == {"cause": "http_status", "model": "vision-test-1", "status": 500}
    assert err.retryable
    assert "HTTP 500" in err.message and "internal" in err.message
    assert len(ep.received) == 2  # at most one retry


async def test_a_model_without_images_is_named() -> None:
    refusal = Step(
        status=400,
        json_body={"error": {"message": "This model does not support image input."}},
    )
    with endpoint(refusal) as ep, pytest.raises(DeskpilotError) as caught:
        await ask_vision_model(_config(ep.url), _screenshot(), "q")
    assert caught.value.details["cause"] == "images_unsupported"
    assert "vision-test-1" in caught.value.message
    assert "DESKPILOT_VISION_MODEL" in caught.value.message
    assert len(ep.received) == 1  # a 4xx is not retried


async def test_an_echoed_key_is_redacted_from_the_message() -> None:
    refusal = Step(status=401, json_body={"error": {"message": f"bad key {KEY}"}})
    with endpoint(refusal) as ep, pytest.raises(DeskpilotError) as caught:
        await ask_vision_model(_config(ep.url), _screenshot(), "q")
    err = caught.value
    assert err.details["status"] == 401
    assert "DESKPILOT_VISION_API_KEY" in err.message
    assert KEY not in err.message and KEY not in repr(err) and KEY not in str(err.to_dict())
    assert "[redacted]" in err.message


async def test_a_timeout_is_a_typed_error_within_the_bound() -> None:
    with endpoint(Step(delay_s=3.0, json_body={})) as ep:
        started = time.monotonic()
        with pytest.raises(DeskpilotError) as caught:
            await ask_vision_model(_config(ep.url, timeout_s=0.5), _screenshot(), "q")
        took = time.monotonic() - started
    assert caught.value.details["cause"] == "timeout"
    assert took < 2.5
    assert len(ep.received) == 1  # a timeout is not retried: it would double the wait


@pytest.mark.parametrize(
    ("step", "cause"),
    [
        (Step(raw=b"<html>gateway</html>"), "not_json"),
        (answer("   "), "empty_answer"),
        (Step(json_body={"choices": []}), "bad_response"),
        (Step(json_body={"object": "list"}), "bad_response"),
    ],
)
async def test_garbage_answers_are_typed_errors(step: Step, cause: str) -> None:
    with endpoint(step) as ep, pytest.raises(DeskpilotError) as caught:
        await ask_vision_model(_config(ep.url), _screenshot(), "q")
    assert caught.value.code is ErrorCode.VISION_UNAVAILABLE
    assert caught.value.details["cause"] == cause


async def test_a_dropped_connection_is_retried_once() -> None:
    with endpoint(Step(drop=True), answer("second time")) as ep:
        result = await ask_vision_model(_config(ep.url), _screenshot(), "q")
    assert result.answer == "second time"
    assert len(ep.received) == 2


async def test_nothing_listening_is_a_network_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DeskpilotError) as caught:
        await ask_vision_model(_config(f"http://127.0.0.1:{port}/v1"), _screenshot(), "q")
    assert caught.value.details["cause"] == "network"
    assert "twice" in caught.value.message


async def test_read_image_uses_the_endpoint_when_configured() -> None:
    engine = OcrEngine()
    with endpoint(answer("A dialog titled Invoice 4711.")) as ep:
        text = await read_image(_screenshot(), question=None, config=_config(ep.url), engine=engine)
    assert text.startswith("VISION_READ_OK source=model model=vision-test-1")
    assert ep.received[0].body["messages"][0]["content"][0]["text"].strip()  # default question
    assert not engine.loaded


@pytest.mark.parametrize(
    "step",
    [
        Step(status=500, json_body={}),
        Step(status=400, json_body={"error": {"message": "image input not supported"}}),
        Step(raw=b"garbage"),
        Step(delay_s=2.0, json_body={}),
    ],
)
async def test_a_failing_endpoint_never_falls_back_to_ocr(step: Step) -> None:
    engine = OcrEngine()
    with endpoint(step, step) as ep, pytest.raises(DeskpilotError) as caught:
        await read_image(
            _screenshot(),
            question="What is shown?",
            config=_config(ep.url, timeout_s=0.5),
            engine=engine,
        )
    assert caught.value.code is ErrorCode.VISION_UNAVAILABLE
    assert ep.received  # the endpoint was asked...
    assert not engine.loaded  # ...and OCR never ran in its place


async def test_read_image_without_config_reads_with_ocr() -> None:
    text = await read_image(_screenshot(1200, 600), question="What invoice?", config=None)
    first, *rest = text.splitlines()
    assert first.startswith("VISION_READ_OK source=ocr image=1200x600 lines=1 ")
    assert rest[-1].endswith("Invoice 4711")


async def test_not_an_image_is_refused_before_any_request() -> None:
    with endpoint(answer("never")) as ep, pytest.raises(DeskpilotError) as caught:
        await read_image(b"GIF89a not really", question="q", config=_config(ep.url))
    assert caught.value.code is ErrorCode.INVALID_REQUEST
    assert ep.received == []
