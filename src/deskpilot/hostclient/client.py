"""One host process and the framed conversation with it.

``HostClient.start()`` verifies the installed host (``artifact``), spawns it and shakes hands
(get_capabilities + protocol version). Calls go through one FIFO lane (``lane``) and are
matched to responses by id, so up to 64 can be outstanding at the host at once.

There is no request-level cancellation inside the host: the only way to stop a request is to
stop the host. So a call that times out, or whose caller is cancelled while the request is at
the host, ends the whole process (close stdin, 300 ms for the host to release held keys and
buttons, SIGKILL). The timed-out call fails with ``action_timeout``, an explicit ``abort()``
fails in-flight calls with ``session_canceled``, every other outstanding or queued call fails
with ``native_host_unavailable``. After that the client is closed for good (a terminal
failure); the supervisor decides whether to start another one.

Only observe, list_windows and get_capabilities are retried transparently, at most
``retry_limit`` times, and only when the host itself marked the error retryable; an action or
a capture is never repeated behind the caller's back.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from deskpilot.hostclient.artifact import ArtifactReport, verify_host_artifact
from deskpilot.hostclient.config import HostConfig
from deskpilot.hostclient.failures import (
    capacity_error,
    from_error_response,
    host_exit_error,
)
from deskpilot.hostclient.lane import OperationLane
from deskpilot.hostclient.process import (
    HostProcess,
    host_environment,
    host_log_path,
    spawn,
    stop,
)
from deskpilot.hostclient.remote import (
    SSH_FAILURE_EXIT,
    log_offset,
    read_log_since,
    remote_location,
    ssh_failure,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.frames import FrameError, encode_json
from deskpilot.protocol.wire import (
    PROTOCOL_VERSION,
    ActionResult,
    Capabilities,
    CaptureResult,
    CaptureWindow,
    ExecuteAction,
    ImageFormat,
    Observation,
    Observe,
    TargetSpec,
    WindowInfo,
    Windows,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
ClientState = Literal["new", "starting", "ready", "closed"]
RETRYABLE_TYPES = frozenset({"observe", "list_windows", "get_capabilities"})


class HostReportedError(DeskpilotError):
    """An ``error`` response: the host answered, and said no."""


@dataclass(slots=True)
class Reply:
    message: dict[str, Any]
    binary: bytes | None


@dataclass(slots=True)
class _Pending:
    future: asyncio.Future[Reply]
    type: str
    session_id: str | None
    sent_at: float


class HostClient:
    def __init__(self, config: HostConfig | None = None) -> None:
        self.config = config or HostConfig()
        self.state: ClientState = "new"
        self.failure: DeskpilotError | None = None
        self.artifact: ArtifactReport | None = None
        self.capabilities_at_start: Capabilities | None = None
        self.returncode: int | None = None
        self.started_at: float | None = None
        #: where the host log stood when this host was spawned (what it said since: its
        #: reason for ending by itself, a refused setting)
        self._log_at = 0
        self.sent: Counter[str] = Counter()  # requests written, by type
        self.retries: Counter[str] = Counter()
        self.last_response_at: float | None = None
        self.lane = OperationLane(self.config.max_in_flight, self.config.max_queued)
        self._host: HostProcess | None = None
        self._shutdown_task: asyncio.Task[None] | None = None
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)
        self._caps: tuple[float, Capabilities] | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ lifecycle

    @property
    def pid(self) -> int | None:
        return self._host.pid if self._host is not None else None

    @property
    def alive(self) -> bool:
        return (
            self.state == "ready"
            and self.failure is None
            and self._host is not None
            and self._host.returncode is None
        )

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def pending_sessions(self) -> set[str]:
        return {p.session_id for p in self._pending.values() if p.session_id is not None}

    async def start(self) -> Capabilities:
        """Verify, spawn, shake hands. Raises with nothing left running on failure."""
        if self.state != "new":
            raise RuntimeError("a HostClient starts once; make a new one to reconnect")
        self.state = "starting"
        remote = self.config.remote_command is not None
        try:
            # a remote host verifies its own install (hostclient/remote_host.py)
            self.artifact = (
                None
                if remote
                else verify_host_artifact(self.config.env if self.config.env is not None else None)
            )
        except DeskpilotError as exc:
            self.state = "closed"
            self.failure = exc
            raise
        env = host_environment(
            self.config, local_trust=self.artifact is not None and self.artifact.local_trust
        )
        self._log_at = log_offset(host_log_path(self.config))
        try:
            self._host = await spawn(self.config, env, self._deliver, self._on_closed)
        except DeskpilotError as exc:
            self.state = "closed"
            self.failure = exc
            raise
        self.started_at = time.monotonic()
        try:

            async def handshake() -> Reply:
                return await self._send_and_wait(
                    {"type": "get_capabilities", "protocolVersion": PROTOCOL_VERSION},
                    timeout=self.config.handshake_timeout_s,
                    session_id=None,
                    kill_on_timeout=True,
                )

            caps = self._handshake(await self._retrying("get_capabilities", handshake))
        except DeskpilotError as exc:
            cause = exc
            if exc.code in (ErrorCode.NATIVE_HOST_UNAVAILABLE, ErrorCode.PROTOCOL_ERROR):
                # the host may have exited by itself (exit 77 = it refused its parent)
                rc = await self._wait_exit(1.0)
                if remote and rc == SSH_FAILURE_EXIT:
                    cause = ssh_failure(self._host_said())
                elif rc is not None:
                    cause = host_exit_error(rc, "during the handshake", self._host_said())
            await self._shutdown(cause)
            raise cause from None
        except BaseException:
            await self._shutdown(
                DeskpilotError(ErrorCode.HOST_HANDSHAKE_FAILED, "the handshake was interrupted")
            )
            raise
        if remote and self.config.remote_command is not None:
            self.artifact = ArtifactReport(
                mode="remote",
                version=caps.host_version,
                location=remote_location(self.config.remote_command),
                notes=("the remote verified its own install; its SSH host key is pinned",),
            )
        self.capabilities_at_start = caps
        self._caps = (time.monotonic(), caps)
        self.state = "ready"
        return caps

    def _handshake(self, reply: Reply) -> Capabilities:
        msg = reply.message
        version = msg.get("protocolVersion")
        if msg.get("type") != "capabilities" or version != PROTOCOL_VERSION:
            raise DeskpilotError(
                ErrorCode.NATIVE_HOST_INCOMPATIBLE,
                f"the host speaks protocol version {version!r}, this client speaks "
                f"{PROTOCOL_VERSION}",
                retryable=False,
                details={"hostProtocolVersion": version, "clientProtocolVersion": PROTOCOL_VERSION},
            )
        return self._validate(Capabilities, msg)

    async def _wait_exit(self, seconds: float) -> int | None:
        if self._host is None:
            return None
        try:
            return await asyncio.wait_for(self._host.wait(), seconds)
        except TimeoutError:
            return None

    async def close(self) -> None:
        """Stop the host the polite way (stdin EOF first); pending calls fail."""
        if self.state == "new":
            self.state = "closed"
            return
        await self._shutdown(
            DeskpilotError(
                ErrorCode.NATIVE_HOST_UNAVAILABLE,
                "the host connection was closed by the client",
                retryable=False,
            )
        )

    async def abort(self, reason: str = "aborted") -> None:
        """Stop whatever the host is doing: in-flight calls end with session_canceled."""
        await self._shutdown(
            DeskpilotError(
                ErrorCode.SESSION_CANCELED,
                f"the call was aborted ({reason}); the host was stopped",
                retryable=False,
            ),
            pending_error=DeskpilotError(
                ErrorCode.SESSION_CANCELED,
                f"the call was aborted ({reason}); the host was stopped",
                retryable=False,
            ),
        )

    async def _shutdown(
        self, cause: DeskpilotError, *, pending_error: DeskpilotError | None = None
    ) -> None:
        if self._shutdown_task is None:
            if self.failure is None:
                self.failure = cause
            self._shutdown_task = asyncio.create_task(self._do_shutdown(cause, pending_error))
        await asyncio.shield(self._shutdown_task)

    def _shutdown_soon(
        self, cause: DeskpilotError, *, pending_error: DeskpilotError | None = None
    ) -> None:
        task = asyncio.ensure_future(self._shutdown(cause, pending_error=pending_error))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _do_shutdown(
        self, cause: DeskpilotError, pending_error: DeskpilotError | None
    ) -> None:
        self.state = "closed"
        self.lane.fail_all(cause)
        if self._host is not None:
            self.returncode = await stop(self._host, self.config.kill_grace_s)
        if pending_error is None:
            pending_error = DeskpilotError(
                ErrorCode.NATIVE_HOST_UNAVAILABLE,
                f"the host was stopped while this call was outstanding: {cause.message}",
                retryable=False,
                details={"cause": cause.code.value},
            )
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(pending_error)
        self._pending.clear()

    # ------------------------------------------------------------------ reading

    def _on_closed(self, error: FrameError | None) -> None:
        """The host's output ended (EOF, exit) or broke the frame protocol."""
        if self._shutdown_task is not None:
            return
        if error is not None:
            log.warning("host protocol failure: %s", error.reason)
            err = DeskpilotError(
                ErrorCode.PROTOCOL_ERROR,
                f"the host broke the frame protocol: {error}",
                retryable=False,
                details={"reason": error.reason},
            )
            self._shutdown_soon(err, pending_error=err)
            return
        task = asyncio.ensure_future(self._after_exit())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _after_exit(self) -> None:
        rc = await self._wait_exit(self.config.kill_grace_s)
        if self._shutdown_task is None:
            # every outstanding call learns the real reason: the host ended
            err = host_exit_error(rc, "unexpectedly", self._host_said())
            await self._shutdown(err, pending_error=err)

    def _host_said(self) -> str:
        """The host log since this host was spawned (its first 16 KiB)."""
        return read_log_since(host_log_path(self.config), self._log_at)

    def _deliver(self, msg: dict[str, Any], binary: bytes | None) -> None:
        self.last_response_at = time.monotonic()
        rid = msg.get("id")
        pending = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if pending is None:
            if msg.get("type") == "error" and rid is None:
                err = from_error_response(msg)
                log.warning("host error without a request id: %s", err.code.value)
                if err.code.drops_connection:
                    self._shutdown_soon(err)
            # otherwise a late answer to a call that already timed out: dropped
            return
        if not pending.future.done():
            pending.future.set_result(Reply(msg, binary))

    # ------------------------------------------------------------------ sending

    def _ensure_open(self) -> None:
        if self.failure is not None:
            raise DeskpilotError(
                ErrorCode.NATIVE_HOST_UNAVAILABLE,
                f"the host connection is closed: {self.failure.message}",
                retryable=False,
                details={"cause": self.failure.code.value},
            )
        if self.state not in ("starting", "ready"):
            raise DeskpilotError(
                ErrorCode.NATIVE_HOST_UNAVAILABLE, "the host is not started", retryable=False
            )

    async def call(
        self,
        request: dict[str, Any],
        *,
        timeout: float | None = None,
        session_id: str | None = None,
        use_lane: bool = True,
        kill_on_timeout: bool = True,
    ) -> Reply:
        """Send one request and wait for its response (an ``error`` response raises).

        ``use_lane=False`` is for the supervisor's probes and cancel_session: they skip the
        queue but still count against the 64 outstanding requests.
        """
        self._ensure_open()
        seconds = self.config.clamp(self.config.request_timeout_s if timeout is None else timeout)
        if use_lane:
            await self.lane.acquire()
            try:
                return await self._send_and_wait(
                    request, timeout=seconds, session_id=session_id, kill_on_timeout=kill_on_timeout
                )
            finally:
                self.lane.release()
        if len(self._pending) >= self.config.max_in_flight:
            raise capacity_error(
                ErrorCode.NATIVE_HOST_REQUEST_CAPACITY_REACHED,
                f"{len(self._pending)} requests are already outstanding at the host "
                f"(limit {self.config.max_in_flight})",
            )
        return await self._send_and_wait(
            request, timeout=seconds, session_id=session_id, kill_on_timeout=kill_on_timeout
        )

    async def _send_and_wait(
        self,
        request: dict[str, Any],
        *,
        timeout: float,
        session_id: str | None,
        kill_on_timeout: bool,
    ) -> Reply:
        self._ensure_open()
        host = self._host
        assert host is not None
        rid = next(self._ids)
        rtype = str(request.get("type"))
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[rid] = _Pending(future, rtype, session_id, time.perf_counter())
        self.sent[rtype] += 1
        try:
            # the timeout covers the write too: a hung host stops reading, and a large
            # request (a long text) then waits for pipe space that never comes
            async with asyncio.timeout(timeout):
                try:
                    host.write(encode_json({"id": rid, **request}))
                    await host.drain()
                except (ConnectionError, RuntimeError) as exc:
                    self._pending.pop(rid, None)
                    err = DeskpilotError(
                        ErrorCode.NATIVE_HOST_UNAVAILABLE,
                        f"writing to the host failed: {exc}",
                        retryable=False,
                    )
                    self._shutdown_soon(err)
                    raise err from None
                reply = await future
        except TimeoutError:
            self._pending.pop(rid, None)
            if not kill_on_timeout:
                raise DeskpilotError(
                    ErrorCode.NATIVE_HOST_UNAVAILABLE,
                    f"the host did not answer {rtype} within {timeout:.2f} s",
                    retryable=True,
                    details={"requestType": rtype, "timeoutS": timeout},
                ) from None
            if self._shutdown_task is not None and self.failure is not None:
                # another call's timeout (or a crash) is already stopping the host: this
                # call is collateral, not the culprit
                await self._shutdown(self.failure)
                raise DeskpilotError(
                    ErrorCode.NATIVE_HOST_UNAVAILABLE,
                    f"the host was stopped while this call was outstanding: {self.failure.message}",
                    retryable=False,
                    details={"cause": self.failure.code.value},
                ) from None
            err = DeskpilotError(
                ErrorCode.ACTION_TIMEOUT,
                f"the host did not answer {rtype} within {timeout:.1f} s; it was stopped "
                "(there is no request-level cancellation inside the host)",
                retryable=False,
                details={"requestType": rtype, "timeoutS": timeout},
            )
            await self._shutdown(err)
            raise err from None
        except asyncio.CancelledError:
            if self._pending.pop(rid, None) is not None and kill_on_timeout:
                # the caller was cancelled while its request was at the host: an abort
                self._shutdown_soon(
                    DeskpilotError(
                        ErrorCode.SESSION_CANCELED,
                        f"the caller of {rtype} was cancelled; the host was stopped",
                        retryable=False,
                    )
                )
            raise
        msg = reply.message
        if msg.get("type") == "error":
            err = from_error_response(msg)
            herr = HostReportedError(
                err.code, err.message, retryable=err.retryable, details=err.details
            )
            if herr.code.drops_connection:
                await self._shutdown(herr)
            raise herr
        return reply

    def _validate(self, model: type[T], msg: dict[str, Any]) -> T:
        try:
            return model.model_validate(msg)  # type: ignore[attr-defined,no-any-return]
        except ValidationError as exc:
            err = DeskpilotError(
                ErrorCode.PROTOCOL_ERROR,
                f"the host sent a malformed {msg.get('type')!r} response: "
                f"{exc.error_count()} validation errors",
                retryable=False,
            )
            self._shutdown_soon(err)
            raise err from None

    def _expect(self, reply: Reply, rtype: str) -> dict[str, Any]:
        if reply.message.get("type") != rtype:
            err = DeskpilotError(
                ErrorCode.PROTOCOL_ERROR,
                f"expected a {rtype!r} response, got {reply.message.get('type')!r}",
                retryable=False,
            )
            self._shutdown_soon(err)
            raise err
        return reply.message

    async def _retrying(self, rtype: str, attempt: Callable[[], Awaitable[T]]) -> T:
        if rtype not in RETRYABLE_TYPES:
            return await attempt()
        retries = 0
        while True:
            try:
                return await attempt()
            except HostReportedError as exc:
                if not exc.retryable or retries >= self.config.retry_limit or self.failure:
                    raise
                retries += 1
                self.retries[rtype] += 1
                await asyncio.sleep(self.config.retry_backoff_s * retries)

    # ------------------------------------------------------------------ typed calls

    async def ping(self) -> dict[str, Any]:
        reply = await self.call({"type": "ping"})
        return self._expect(reply, "pong")

    async def get_capabilities(self, *, fresh: bool = False) -> Capabilities:
        """Cached for ``capabilities_ttl_s`` (1 s) unless ``fresh``."""
        if not fresh and self._caps is not None:
            at, caps = self._caps
            if time.monotonic() - at < self.config.capabilities_ttl_s:
                return caps

        async def once() -> Capabilities:
            reply = await self.call({"type": "get_capabilities"})
            return self._validate(Capabilities, self._expect(reply, "capabilities"))

        caps = await self._retrying("get_capabilities", once)
        self._caps = (time.monotonic(), caps)
        return caps

    async def probe(self, timeout: float) -> Capabilities:
        """The heartbeat: a fresh get_capabilities outside the lane; a timeout does not kill."""
        reply = await self.call(
            {"type": "get_capabilities"}, timeout=timeout, use_lane=False, kill_on_timeout=False
        )
        caps = self._validate(Capabilities, self._expect(reply, "capabilities"))
        self._caps = (time.monotonic(), caps)
        return caps

    async def list_windows(self) -> list[WindowInfo]:
        async def once() -> list[WindowInfo]:
            reply = await self.call({"type": "list_windows"})
            return self._validate(Windows, self._expect(reply, "windows")).windows

        return await self._retrying("list_windows", once)

    async def observe(
        self,
        *,
        session_id: str | None,
        target: TargetSpec | None = None,
        include_screenshot: bool = True,
        timeout: float | None = None,
    ) -> tuple[Observation, bytes | None]:
        request = Observe(
            id=0,
            session_id=session_id,
            target=target or TargetSpec(),
            include_screenshot=include_screenshot,
        ).wire()

        async def once() -> tuple[Observation, bytes | None]:
            reply = await self.call(_strip_id(request), timeout=timeout, session_id=session_id)
            obs = self._validate(Observation, self._expect(reply, "observation"))
            return obs, reply.binary

        return await self._retrying("observe", once)

    async def capture(
        self,
        *,
        session_id: str | None,
        target: TargetSpec | None = None,
        timeout: float | None = None,
        screen: bool = False,
        image_format: ImageFormat = "png",
        quality: int | None = None,
        include_pointer: bool = False,
    ) -> tuple[CaptureResult, bytes]:
        """One picture (never retried). The keyword options after ``timeout`` are the live
        view's (CaptureWindow): the whole screen, JPEG, the pointer."""
        request = CaptureWindow(
            id=0,
            session_id=session_id,
            target=target or TargetSpec(),
            screen=screen,
            format=image_format,
            quality=quality,
            include_pointer=include_pointer,
        ).wire()
        reply = await self.call(_strip_id(request), timeout=timeout, session_id=session_id)
        result = self._validate(CaptureResult, self._expect(reply, "capture_result"))
        if reply.binary is None:  # pragma: no cover - the reader enforces the pairing
            raise DeskpilotError(ErrorCode.PROTOCOL_ERROR, "capture_result without its image")
        if result.image.format != image_format or (result.window is None) != screen:
            err = DeskpilotError(
                ErrorCode.PROTOCOL_ERROR,
                "the host answered a capture with another kind of picture than was asked",
                retryable=False,
            )
            self._shutdown_soon(err)
            raise err
        return result, reply.binary

    async def execute_action(
        self, request: ExecuteAction, *, timeout: float | None = None
    ) -> tuple[ActionResult, bytes | None]:
        """Send one action as the kernel built it (its ``id`` is replaced by this client's)."""
        seconds = (
            timeout
            if timeout is not None
            else self.config.action_timeout(request.action, request.settle_ms)
        )
        reply = await self.call(
            _strip_id(request.wire()), timeout=seconds, session_id=request.session_id
        )
        return self._validate(ActionResult, self._expect(reply, "action_result")), reply.binary

    async def cancel_session(self, session_id: str) -> None:
        """The host forgets the session (sticky refusal of its actions); nothing is killed."""
        reply = await self.call({"type": "cancel_session", "sessionId": session_id}, use_lane=False)
        self._expect(reply, "ack")


def _strip_id(request: dict[str, Any]) -> dict[str, Any]:
    request.pop("id", None)
    return request
