"""The host process's wire behaviour: envelope, typed errors, exits 76/77, stdout hygiene."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from host_harness import HostProcess

from deskpilot.protocol.frames import HEADER, MAX_PAYLOAD_BYTES, FrameKind, encode_frame
from deskpilot.protocol.wire import RESPONSE_ADAPTER

pytestmark = pytest.mark.desktop


def test_ping_answers_with_the_same_id_and_a_pong(host: HostProcess) -> None:
    response = host.call({"id": "abc-1", "type": "ping"})
    assert response == {
        "id": "abc-1",
        "type": "pong",
        "hostVersion": response["hostVersion"],
        "pid": host.proc.pid,
    }
    RESPONSE_ADAPTER.validate_python(response)


def test_capabilities_report_real_probes(host: HostProcess) -> None:
    caps = host.call({"type": "get_capabilities"})
    RESPONSE_ADAPTER.validate_python(caps)
    assert caps["available"] is True
    assert caps["platform"] == "linux"
    assert caps["sessionType"] == "x11"
    assert caps["backends"] == {"screen": "x11", "accessibility": "at_spi", "input": "xtest"}
    assert caps["permissions"] == {
        "screen": "granted",
        "accessibility": "granted",
        "input": "granted",
    }
    assert caps["protocolVersion"] == 1
    # the private desktop starts Xvfb with MIT-SHM: capture must use it
    assert caps["features"]["xshm"] is True


def test_request_permissions_answers_with_capabilities(host: HostProcess) -> None:
    assert host.call({"type": "request_permissions"})["type"] == "capabilities"


@pytest.mark.parametrize(
    ("request_body", "code", "detail_key"),
    [
        ({"type": "ping", "extra": 1}, "invalid_request", "unknownFields"),
        ({"type": "list_windows", "windowId": "0x1"}, "invalid_request", "unknownFields"),
        ({"type": "observe", "target": {"title": "x"}}, "invalid_request", "unknownFields"),
        ({"type": "teleport"}, "invalid_request", "type"),
        ({"type": "ping", "protocolVersion": 2}, "native_host_incompatible", None),
        ({"type": "cancel_session"}, "invalid_request", "problems"),
        (
            {
                "type": "execute_action",
                "frameId": "f",
                "treeVersion": "t",
                "action": {"kind": "fly"},
            },
            "invalid_request",
            "problems",
        ),
        (
            {
                "type": "execute_action",
                "frameId": "f",
                "treeVersion": "t",
                "action": {"kind": "type_text", "text": "secret-typed-text", "bogus": True},
            },
            "invalid_request",
            "unknownFields",
        ),
    ],
)
def test_bad_requests_get_typed_errors_and_the_host_keeps_serving(
    host: HostProcess, request_body: dict[str, object], code: str, detail_key: str | None
) -> None:
    response = host.call(request_body)
    RESPONSE_ADAPTER.validate_python(response)
    assert response["type"] == "error"
    assert response["code"] == code
    if detail_key:
        assert detail_key in response["details"]
    assert "secret-typed-text" not in repr(response)  # values are never echoed
    assert host.call({"type": "ping"})["type"] == "pong"


def test_unknown_field_names_are_reported_without_the_union_tag(host: HostProcess) -> None:
    response = host.call({"type": "observe", "verbose": True})
    assert response["details"]["unknownFields"] == ["verbose"]


def test_malformed_json_inside_a_good_frame_is_an_error_not_an_exit(host: HostProcess) -> None:
    for payload in (b"{not json", b"\xff\xfe", b"[1, 2]", b'"ping"', b'{"type": "ping"}'):
        host.write_raw(encode_frame(FrameKind.JSON, payload))
        response, _ = host.read_response()
        assert response["type"] == "error"
        assert response["code"] == "invalid_request"
        assert response["id"] is None
    assert host.call({"type": "ping"})["type"] == "pong"
    assert host.proc.poll() is None


def test_boolean_ids_are_rejected(host: HostProcess) -> None:
    host.send({"id": True, "type": "ping"})
    response, _ = host.read_response()
    assert response["code"] == "invalid_request"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (encode_frame(FrameKind.BINARY, b"\x89PNG"), "binary_request"),
        (HEADER.pack(3, 7) + b"abc", "unknown_kind"),
        (HEADER.pack(0, 1), "empty_payload"),
        (HEADER.pack(MAX_PAYLOAD_BYTES + 1, 1), "oversize"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "unknown_kind"),
        (HEADER.pack(100, 1) + b'{"id":1', "truncated"),
    ],
)
def test_framing_failures_end_the_host_with_exit_76(
    desktop: object, raw: bytes, reason: str
) -> None:
    with HostProcess() as host:
        assert host.call({"type": "ping"})["type"] == "pong"
        host.write_raw(raw)
        if reason == "truncated":
            host.close_stdin()
        response, _ = host.read_response()
        assert response["type"] == "error"
        assert response["code"] == "protocol_error"
        assert response["details"]["reason"] == reason
        assert host.wait() == 76


def test_stdin_eof_is_a_clean_exit(desktop: object) -> None:
    with HostProcess() as host:
        host.call({"type": "ping"})
        host.close_stdin()
        assert host.wait() == 0
        with pytest.raises(EOFError):
            host.next_frame(timeout=5)


def test_without_trust_the_host_exits_77_before_reading(desktop: object) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DESKPILOT_HOST_LOCAL_TRUST"}
    proc = subprocess.run(
        [sys.executable, "-m", "deskpilot.host"],
        input=encode_frame(FrameKind.JSON, b'{"id":1,"type":"ping"}'),
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert proc.returncode == 77
    assert proc.stdout == b""


def test_stdout_carries_only_frames_even_when_something_prints(
    desktop: object, tmp_path: Path
) -> None:
    # a sitecustomize starts a thread that prints and writes to fd 1 once the host is serving
    (tmp_path / "sitecustomize.py").write_text(
        "import os, sys, threading, time\n"
        "def _noise():\n"
        "    time.sleep(1.0)\n"
        "    print('stray print')\n"
        "    os.write(1, b'stray raw write\\n')\n"
        "threading.Thread(target=_noise, daemon=True).start()\n"
    )
    pythonpath = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    with HostProcess({"PYTHONPATH": pythonpath}) as host:
        assert host.call({"type": "ping"})["type"] == "pong"
        time.sleep(1.5)
        for _ in range(3):
            assert host.call({"type": "ping"})["type"] == "pong"
        host.close_stdin()
        assert host.wait() == 0
        with pytest.raises(EOFError):
            host.next_frame(timeout=5)  # nothing but frames before EOF
        assert "stray print" in host.stderr_text()
        assert "stray raw write" in host.stderr_text()


def test_many_requests_in_flight_are_answered_in_order(host: HostProcess) -> None:
    ids = [host.send({"type": "ping"}) for _ in range(50)]
    got = [host.read_response()[0]["id"] for _ in ids]
    assert got == ids


def test_header_layout_is_big_endian_length_then_kind(host: HostProcess) -> None:
    payload = b'{"id":77,"type":"ping"}'
    host.write_raw(struct.pack(">I", len(payload)) + bytes([1]) + payload)
    response, _ = host.read_response()
    assert response["id"] == 77


def test_wayland_without_an_x_server_is_unsupported_with_a_reason(desktop: object) -> None:
    env = {"DISPLAY": "", "WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}
    with HostProcess(env) as host:
        caps = host.call({"type": "get_capabilities"})
        RESPONSE_ADAPTER.validate_python(caps)
        assert caps["available"] is False
        assert caps["sessionType"] == "wayland"
        assert caps["permissions"]["screen"] == "unsupported"
        assert caps["permissions"]["input"] == "unsupported"
        assert caps["backends"]["screen"] == "none"
        assert "Wayland" in caps["unavailableReason"]
        # the host keeps serving; desktop requests fail with a typed error
        assert host.call({"type": "list_windows"})["code"] == "environment_unavailable"
        assert host.call({"type": "ping"})["type"] == "pong"


def test_an_unreachable_x_server_is_reported_not_a_crash(desktop: object) -> None:
    with HostProcess({"DISPLAY": ":999"}) as host:
        caps = host.call({"type": "get_capabilities"})
        assert caps["available"] is False
        assert caps["permissions"]["screen"] == "not_determined"
        assert ":999" in caps["unavailableReason"]
        response = host.call({"type": "observe"})
        assert response["code"] == "environment_unavailable"
