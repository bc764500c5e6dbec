"""The only code that talks HTTP: one POST to ``/chat/completions`` per attempt, bounded.

The per-attempt timeout wraps the whole exchange including the body read, because an endpoint
that sends headers and then stalls must not escape the timeout. The caller owns abort; the
client owns its timers, so a timeout and an abort are never confused.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from deskpilot.provider.config import ProviderConfig
from deskpilot.provider.contract import ProviderError, load_contract
from deskpilot.provider.contract.bounded_json import JSONRejected, loads
from deskpilot.provider.telemetry import NullTelemetry, Telemetry
from deskpilot.provider.transport.budget import RequestBudget, parse_retry_after

T = TypeVar("T")
FORBIDDEN_PAYLOAD_KEYS = (
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "functions",
    "function_call",
    "thinking",
    "reasoning_effort",
)
USER_AGENT = "deskpilot-provider/1"


@dataclass(frozen=True, slots=True)
class ChatResponse:
    content: str
    native_tool_calls: list[dict[str, Any]] | None
    finish_reason: str | None
    latency_ms: float
    attempts: int
    status: int
    body_bytes: int
    usage: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def check_payload(payload: Mapping[str, Any]) -> None:
    """Turn requests carry no native tool protocol; this is enforced, not just intended."""
    bad = [k for k in FORBIDDEN_PAYLOAD_KEYS if k in payload]
    if any(isinstance(m, Mapping) and m.get("role") == "tool" for m in payload.get("messages", [])):
        bad.append("messages[role=tool]")
    if bad:
        raise ProviderError(
            "configuration_invalid", f"request payload carries forbidden fields: {', '.join(bad)}"
        )


def extract_message(data: Any) -> tuple[str, list[dict[str, Any]] | None, str | None]:
    if not isinstance(data, dict):
        raise ProviderError("malformed_response", "response JSON is not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        kind = "an error object" if "error" in data else "no choices"
        raise ProviderError("malformed_response", f"response has {kind}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ProviderError("malformed_response", "choices[0].message is missing")
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    if content is not None and not isinstance(content, str):
        raise ProviderError("malformed_response", "message.content is not text")
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise ProviderError("malformed_response", "message.tool_calls is not a list")
    finish = choices[0].get("finish_reason")
    return content or "", tool_calls or None, finish if isinstance(finish, str) else None


class ChatClient:
    """Retrying chat-completions client; raises :class:`ProviderError` with a manifest code."""

    def __init__(
        self,
        config: ProviderConfig,
        *,
        telemetry: Telemetry | None = None,
        http: httpx.AsyncClient | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.telemetry: Telemetry = telemetry or NullTelemetry()
        self._http = http or httpx.AsyncClient(timeout=httpx.Timeout(None), trust_env=False)
        self._owns_http = http is None
        self._rng = rng or random.Random()
        self._contract = load_contract()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def complete(
        self,
        payload: dict[str, Any],
        *,
        abort: asyncio.Event | None = None,
        allow_native: bool = False,
        attempts: int | None = None,
    ) -> ChatResponse:
        key = self.config.require_key()
        if not allow_native:
            check_payload(payload)
        if abort is not None and abort.is_set():
            raise ProviderError("request_aborted", "aborted before the request started")
        policy = self.config.limits
        budget = RequestBudget(policy, rng=self._rng)
        max_attempts = attempts or policy.request_attempts
        attempt = 0
        while True:
            attempt += 1
            timeout = budget.attempt_timeout()
            if timeout <= 0:
                raise ProviderError("deadline_exceeded", "total deadline spent before an attempt")
            self.telemetry.emit(
                "request",
                attempt=attempt,
                attempt_count=max_attempts,
                retry_count=attempt - 1,
                timeout_ms=round(timeout * 1000),
                model=self.config.model,
                message_count=len(payload.get("messages", [])),
            )
            started = time.monotonic()
            try:
                result = await self._abortable(self._attempt(payload, key, timeout), abort)
                latency = (time.monotonic() - started) * 1000
                response = self._to_response(result, latency, attempt)
            except ProviderError as err:
                latency = (time.monotonic() - started) * 1000
                err.detail.setdefault("attempts", attempt)
                self._emit_error(err, attempt, latency)
                delay = self._retry_delay(err, attempt, max_attempts, budget, abort)
                if delay is None:
                    raise
                self.telemetry.emit(
                    "request.retry",
                    attempt=attempt,
                    code=err.code,
                    retry_delay_ms=round(delay * 1000),
                )
                await self._abortable(asyncio.sleep(delay), abort)
                continue
            self.telemetry.emit(
                "response",
                attempt=attempt,
                attempt_count=max_attempts,
                retry_count=attempt - 1,
                status=response.status,
                request_latency_ms=round(response.latency_ms, 1),
                body_bytes=response.body_bytes,
                finish_reason=response.finish_reason,
                native_tool_calls=len(response.native_tool_calls or ()),
            )
            return response

    def _retry_delay(
        self,
        err: ProviderError,
        attempt: int,
        max_attempts: int,
        budget: RequestBudget,
        abort: asyncio.Event | None,
    ) -> float | None:
        """The delay before the next attempt, or None with the suppression reason recorded."""
        spec = self._contract.spec(err.code)
        retry_after = err.detail.get("retryAfterS")
        delay: float | None = None
        reason: str | None = None
        if err.code == "request_aborted" or (abort is not None and abort.is_set()):
            reason = "caller_aborted"
        elif not spec.retryable:
            reason = "non_retryable_error"
        elif attempt >= max_attempts:
            reason = "attempts_exhausted"
        elif not spec.immediate_retry:
            if err.code == "http_429" and isinstance(retry_after, float):
                delay = budget.clamp_retry_after(retry_after)
            else:
                reason = (
                    "rate_limit_immediate_retry_disabled"
                    if err.code == "http_429"
                    else "provider_immediate_retry_disabled"
                )
        else:
            delay = budget.backoff(attempt)
            if isinstance(retry_after, float):
                delay = max(delay, budget.clamp_retry_after(retry_after))
        if delay is not None and not budget.fits(delay):
            reason, delay = "deadline_exhausted", None
        if reason is not None:
            err.detail["retrySuppressedReason"] = reason
            self.telemetry.emit(
                "request.retry_suppressed",
                attempt=attempt,
                code=err.code,
                retry_suppressed_reason=reason,
            )
        return delay

    def _emit_error(self, err: ProviderError, attempt: int, latency_ms: float) -> None:
        spec = self._contract.spec(err.code)
        self.telemetry.emit(
            "error.provider",
            attempt=attempt,
            errorCode=err.code,
            errorCategory=spec.category,
            retryable=spec.retryable,
            httpStatus=err.http_status,
            request_latency_ms=round(latency_ms, 1),
        )

    async def _abortable(self, work: Awaitable[T], abort: asyncio.Event | None) -> T:
        if abort is None:
            return await work
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(abort.wait())
        try:
            done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the caller itself was cancelled (Ctrl-C): end the request too
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise
        finally:
            waiter.cancel()
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise ProviderError("request_aborted", "aborted by the caller")

    async def _attempt(
        self, payload: dict[str, Any], key: str, timeout: float
    ) -> tuple[int, int, bytes]:
        limit = self.config.limits.max_response_bytes
        headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        try:
            async with asyncio.timeout(timeout):
                async with self._http.stream(
                    "POST", self.config.endpoint, json=payload, headers=headers
                ) as resp:
                    declared = resp.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > limit:
                        raise ProviderError(
                            "response_too_large",
                            f"declared body of {declared} bytes exceeds {limit}",
                            http_status=resp.status_code,
                        )
                    chunks: list[bytes] = []
                    total = 0
                    async for chunk in resp.aiter_bytes():
                        total += len(chunk)
                        if total > limit:
                            raise ProviderError(
                                "response_too_large",
                                f"body exceeds {limit} bytes",
                                http_status=resp.status_code,
                            )
                        chunks.append(chunk)
                    body = b"".join(chunks)
                    if not 200 <= resp.status_code < 300:
                        raise self._http_error(resp.status_code, resp.headers.get("retry-after"))
                    return resp.status_code, total, body
        except TimeoutError:
            raise ProviderError(
                "request_timeout", f"no complete response within {round(timeout * 1000)} ms"
            ) from None
        except httpx.TimeoutException:
            raise ProviderError("request_timeout", "HTTP timeout") from None
        except httpx.HTTPError as exc:
            url = httpx.URL(self.config.endpoint)
            where = f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")
            raise ProviderError(
                "network_error", f"{exc.__class__.__name__} reaching {where}"
            ) from None

    def _http_error(self, status: int, retry_after: str | None) -> ProviderError:
        code = self._contract.classify_http(status)
        detail: dict[str, Any] = {}
        seconds = parse_retry_after(retry_after)
        if seconds is not None:
            detail["retryAfterS"] = float(seconds)
        return ProviderError(code, f"HTTP {status}", http_status=status, detail=detail)

    @staticmethod
    def _to_response(result: tuple[int, int, bytes], latency: float, attempts: int) -> ChatResponse:
        status, size, body = result
        try:
            data = loads(body)
        except JSONRejected as exc:
            message = f"response body is not usable JSON: {exc}"
            raise ProviderError("non_json_response", message) from None
        content, tool_calls, finish = extract_message(data)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        return ChatResponse(
            content=content,
            native_tool_calls=tool_calls,
            finish_reason=finish,
            latency_ms=latency,
            attempts=attempts,
            status=status,
            body_bytes=size,
            usage=usage,
            raw=data,
        )
