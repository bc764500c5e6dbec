"""The multimodal endpoint: one OpenAI-compatible Chat Completions request per question.

The frame goes as a JPEG data URL (the model frame: long edge at most 1,600 px) next to the
question in one user message. One attempt is bounded by the configured timeout; a transient
failure (a connection error, a 5xx) is retried once, nothing else is. Every failure is a
typed ``vision_unavailable`` error whose ``details.cause`` names it (``http_status``,
``timeout``, ``network``, ``not_json``, ``bad_response``, ``empty_answer``,
``images_unsupported``): there is never a silent switch to OCR or to another model. The API
key goes only into the ``Authorization`` header; it is in no message and no detail.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import httpx

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision.config import VisionConfig
from deskpilot.vision.evidence import VisionAnswer
from deskpilot.vision.frames import ModelFrame, decode_image, model_frame

#: Pause before the one retry of a transient failure.
RETRY_DELAY_S = 0.5
#: How much of an endpoint's own error text a message may quote (it is the server's, not ours).
_QUOTE_CHARS = 200
_IMAGE_WORDS = ("image", "vision", "multimodal", "multi-modal")
_REFUSAL_WORDS = ("support", "not allowed", "cannot", "can't", "invalid", "unknown")


async def ask_vision_model(config: VisionConfig, image: bytes, question: str) -> VisionAnswer:
    """The configured model's answer to ``question`` about ``image`` (encoded bytes)."""
    if not question.strip():
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST,
            "a question for the vision model must not be empty",
            details={"cause": "question"},
        )
    started = time.perf_counter()
    frame = await asyncio.to_thread(_prepare, image)
    body = request_body(config.model, question, frame)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    timeout = httpx.Timeout(config.timeout_s)
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:
        response = await _post_with_one_retry(client, config, body, headers)
    answer = _answer_text(config, response)
    return VisionAnswer(
        model=config.model,
        answer=answer,
        width=frame.source_width,
        height=frame.source_height,
        sent_width=frame.width,
        sent_height=frame.height,
        elapsed_ms=(time.perf_counter() - started) * 1000.0,
    )


def request_body(model: str, question: str, frame: ModelFrame) -> dict[str, Any]:
    """The Chat Completions request: one user message, the question then the image."""
    data_url = "data:image/jpeg;base64," + base64.b64encode(frame.jpeg).decode("ascii")
    return {
        "model": model,
        "stream": False,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": question},
                    {"type": "image_url", "image_url": {"url": data_url}},
                ],
            }
        ],
    }


def _prepare(image: bytes) -> ModelFrame:
    return model_frame(decode_image(image))


async def _post_with_one_retry(
    client: httpx.AsyncClient,
    config: VisionConfig,
    body: dict[str, Any],
    headers: dict[str, str],
) -> httpx.Response:
    url = config.chat_completions_url
    for attempt in (1, 2):
        try:
            response = await client.post(url, json=body, headers=headers)
        except httpx.TimeoutException:
            raise _failure(
                config,
                f"the vision endpoint did not answer within {config.timeout_s:g} s",
                cause="timeout",
                retryable=True,
            ) from None
        except httpx.TransportError as exc:
            if attempt == 1:
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            raise _failure(
                config,
                f"cannot reach the vision endpoint ({type(exc).__name__}), twice",
                cause="network",
                retryable=True,
            ) from None
        if response.status_code >= 500 and attempt == 1:
            await asyncio.sleep(RETRY_DELAY_S)
            continue
        return response
    raise AssertionError("unreachable: the second attempt returns or raises")


def _answer_text(config: VisionConfig, response: httpx.Response) -> str:
    status = response.status_code
    if status != 200:
        raise _status_failure(config, response)
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _failure(
            config, "the vision endpoint answered with something that is not JSON", "not_json"
        ) from None
    content = _message_content(payload)
    if content is None:
        raise _failure(
            config,
            "the vision endpoint's answer has no choices[0].message.content",
            "bad_response",
        )
    if not content.strip():
        raise _failure(config, "the vision model gave an empty answer", "empty_answer")
    return content


def _message_content(payload: Any) -> str | None:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, as some servers answer
        texts = [
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "\n".join(texts)
    return None


def _status_failure(config: VisionConfig, response: httpx.Response) -> DeskpilotError:
    status = response.status_code
    said = _server_message(config, response)
    lowered = said.lower()
    if (
        400 <= status < 500
        and any(w in lowered for w in _IMAGE_WORDS)
        and any(w in lowered for w in _REFUSAL_WORDS)
    ):
        return _failure(
            config,
            f"the vision endpoint refused the image (HTTP {status}): model {config.model!r} "
            f"does not accept images; set DESKPILOT_VISION_MODEL to a multimodal model"
            + (f" (server said: {said})" if said else ""),
            "images_unsupported",
            status=status,
        )
    meaning = {
        401: "the API key was refused (DESKPILOT_VISION_API_KEY)",
        403: "the API key may not use this model",
        404: "no such endpoint or model (DESKPILOT_VISION_BASE_URL, DESKPILOT_VISION_MODEL)",
        413: "the request is too large for the endpoint",
        429: "the endpoint is rate limiting",
    }.get(status, "the request failed" if status < 500 else "the endpoint failed")
    retries = " (after one retry)" if status >= 500 else ""
    return _failure(
        config,
        f"the vision endpoint answered HTTP {status}{retries}: {meaning}"
        + (f" (server said: {said})" if said else ""),
        "http_status",
        status=status,
        retryable=status == 429 or status >= 500,
    )


def _server_message(config: VisionConfig, response: httpx.Response) -> str:
    """The endpoint's own error text, short, on one line, with the key scrubbed."""
    try:
        payload = response.json()
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            text = str(error.get("message", ""))
        elif isinstance(error, str):
            text = error
        else:
            text = ""
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        text = response.text
    text = " ".join(text.split())
    if config.api_key:
        text = text.replace(config.api_key, "[redacted]")
    return text[:_QUOTE_CHARS]


def _failure(
    config: VisionConfig,
    message: str,
    cause: str,
    *,
    status: int | None = None,
    retryable: bool = False,
) -> DeskpilotError:
    details: dict[str, Any] = {"cause": cause, "model": config.model}
    if status is not None:
        details["status"] = status
    return DeskpilotError(
        ErrorCode.VISION_UNAVAILABLE, message, retryable=retryable, details=details
    )
