"""Preview tokens: format, lifetime, revocation, URL shape."""

from __future__ import annotations

import pytest
from vault_helpers import Clock

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vault.capabilities import (
    TOKEN_RE,
    CapabilityRegistry,
    parse_preview_target,
    preview_url,
)


def test_token_format_and_default_ttl() -> None:
    clock = Clock(1000.0)
    reg = CapabilityRegistry(clock)
    token, expires = reg.issue("snap_1")
    assert TOKEN_RE.match(token) and len(token) == 43  # 32 bytes base64url, unpadded
    assert expires == 1300.0
    assert reg.check(token, "snap_1")
    assert not reg.check(token, "snap_2")
    clock.advance(299.9)
    assert reg.check(token, "snap_1")
    clock.advance(0.2)
    assert not reg.check(token, "snap_1")
    assert reg.active() == 0


@pytest.mark.parametrize("ttl", [1.0, 60.0, 3600.0])
def test_ttl_bounds_accepted(ttl: float) -> None:
    clock = Clock(0.0)
    token, expires = CapabilityRegistry(clock).issue("s", ttl_s=ttl)
    assert expires == ttl and TOKEN_RE.match(token)


@pytest.mark.parametrize("ttl", [0.0, 0.5, 3600.5, -1.0])
def test_ttl_out_of_bounds_is_an_error(ttl: float) -> None:
    with pytest.raises(DeskpilotError) as err:
        CapabilityRegistry().issue("s", ttl_s=ttl)
    assert err.value.code is ErrorCode.INVALID_REQUEST


def test_revocation_by_session_snapshot_and_turn() -> None:
    reg = CapabilityRegistry()
    a, _ = reg.issue("snap_a", session_id="s1", turn_id="t1")
    b, _ = reg.issue("snap_b", session_id="s1", turn_id="t2")
    c, _ = reg.issue("snap_c", session_id="s2", turn_id="t2")
    d, _ = reg.issue("snap_d")
    assert reg.revoke_turn("t2") == 2
    assert reg.check(a, "snap_a") and not reg.check(b, "snap_b") and not reg.check(c, "snap_c")
    assert reg.revoke_session("s1") == 1
    assert not reg.check(a, "snap_a")
    assert reg.revoke_snapshot("snap_d") == 1
    assert not reg.check(d, "snap_d")


def test_malformed_tokens_never_check() -> None:
    reg = CapabilityRegistry()
    reg.issue("snap_1")
    for bad in ("", "short", "a" * 42, "a" * 129, "a" * 42 + "=", "../" * 20):
        assert not reg.check(bad, "snap_1")


def test_url_shape_and_exact_parse() -> None:
    token = "A" * 43
    url = preview_url("http://127.0.0.1:5000", "snap_1", token)
    assert url == f"http://127.0.0.1:5000/snapshot/snap_1/preview?cap={token}"
    host = "127.0.0.1:5000"
    ok = parse_preview_target(host, "/snapshot/snap_1/preview", f"cap={token}", base_host=host)
    assert ok == ("snap_1", token)
    for path, query, h in [
        ("/snapshot/snap_1/preview/", f"cap={token}", host),
        ("/snapshot/snap%5F1/preview", f"cap={token}", host),
        ("//snapshot/snap_1/preview", f"cap={token}", host),
        ("/snapshot/snap_1/preview", f"cap={token}&cap={token}", host),
        ("/snapshot/snap_1/preview", f"cap={token}&x=1", host),
        ("/snapshot/snap_1/preview", f"x=1&cap={token}", host),
        ("/snapshot/snap_1/preview", f"Cap={token}", host),
        ("/snapshot/snap_1/preview", "cap=", host),
        ("/snapshot/snap_1/preview", f"cap={token}", "localhost:5000"),
        ("/snapshot/snap_1/preview", f"cap={token}", "127.0.0.1"),
    ]:
        assert parse_preview_target(h, path, query, base_host=host) is None, (path, query, h)
