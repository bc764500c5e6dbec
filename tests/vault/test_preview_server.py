"""The loopback preview server, rule by rule, over real HTTP."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest
from vault_helpers import Clock, add_session, decode, make_png, window

from deskpilot.protocol.wire import AppIdentity, Rect
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings
from deskpilot.store.snapshots import BlobRow, SnapshotRow
from deskpilot.vault.service import SnapshotRecord, SnapshotService
from deskpilot.vault.store import Vault
from deskpilot.web.preview import PreviewServer

CSP = "default-src 'none'; sandbox"
APP = AppIdentity(executable="mousepad")


@pytest.fixture
def server(service: SnapshotService) -> Iterator[PreviewServer]:
    srv = PreviewServer(service)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0) as client:
        yield client


@pytest.fixture
def snap(service: SnapshotService, server: PreviewServer) -> SnapshotRecord:
    return service.capture_app_snapshot(
        make_png(1600, 1000, (200, 30, 30)),
        app=APP,
        window=window(800, 500),
        sensitive_regions=[Rect(x=0, y=0, width=200, height=60)],
        turn_id="turn-1",
    )


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 exchange on a plain socket, for request targets httpx would normalise."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    return status, headers, body


def _port(server: PreviewServer) -> int:
    assert server.base_url is not None
    return int(server.base_url.rsplit(":", 1)[1])


def _assert_bare(resp: httpx.Response, status: int) -> None:
    assert resp.status_code == status
    assert resp.content == b""
    assert resp.headers["cache-control"] == "private, no-store"
    assert resp.headers["content-security-policy"] == CSP


def test_get_serves_redacted_preview_with_headers(
    http: httpx.Client, snap: SnapshotRecord, server: PreviewServer
) -> None:
    assert snap.preview_url is not None
    assert snap.preview_url.startswith(f"{server.base_url}/snapshot/{snap.id}/preview?cap=")
    resp = http.get(snap.preview_url)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "image/png"
    assert resp.headers["cache-control"] == "private, no-store"
    assert resp.headers["content-security-policy"] == CSP
    img = decode(resp.content)
    assert img.size == (1200, 750)
    assert img.getpixel((100, 40)) == (128, 128, 128)  # the secure region, painted out
    assert img.getpixel((600, 400)) == (200, 30, 30)


def test_head(http: httpx.Client, snap: SnapshotRecord) -> None:
    assert snap.preview_url is not None
    get = http.get(snap.preview_url)
    head = http.head(snap.preview_url)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(get.content))
    assert head.headers["content-type"] == "image/png"
    assert head.headers["content-security-policy"] == CSP


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_405(http: httpx.Client, snap: SnapshotRecord, method: str) -> None:
    assert snap.preview_url is not None
    resp = http.request(method, snap.preview_url)
    _assert_bare(resp, 405)
    assert resp.headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda u: u + "&x=1",
        lambda u: u + "&cap=" + u.split("cap=")[1],
        lambda u: u.replace("?cap=", "?x=1&cap="),
        lambda u: u.split("?")[0],
        lambda u: u.split("=")[0] + "=",
        lambda u: u.replace("?cap=", "?Cap="),
        lambda u: u.replace("/preview?", "/preview/?"),
        lambda u: u.replace("/preview?", "/image?"),
        lambda u: u.replace("/snapshot/", "/Snapshot/"),
        lambda u: u[:-1] + ("A" if u[-1] != "A" else "B"),  # a different, well-formed token
        lambda u: u[:-3],  # too short
    ],
)
def test_any_other_url_404(http: httpx.Client, snap: SnapshotRecord, mutate: object) -> None:
    assert snap.preview_url is not None
    url = mutate(snap.preview_url)  # type: ignore[operator]
    assert url != snap.preview_url
    _assert_bare(http.get(url), 404)
    # and the server keeps serving
    assert http.get(snap.preview_url).status_code == 200


def test_raw_targets_404(server: PreviewServer, snap: SnapshotRecord) -> None:
    assert snap.preview_url is not None
    port = _port(server)
    path_q = snap.preview_url.split(str(port), 1)[1]
    encoded = path_q.replace("snap_", "snap%5F")
    host = f"127.0.0.1:{port}"
    cases = [
        f"GET {encoded} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
        f"GET /./{path_q[1:]} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
        f"GET {path_q} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n",
        f"GET {path_q} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        f"GET {path_q} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    ]
    for req in cases:
        status, headers, body = _raw(port, req.encode())
        assert (status, body) == (404, b""), req
        assert headers["content-security-policy"] == CSP
    ok = f"GET {path_q} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    assert _raw(port, ok.encode())[0] == 200


def test_token_for_another_snapshot_404(
    http: httpx.Client, service: SnapshotService, snap: SnapshotRecord, server: PreviewServer
) -> None:
    other = service.capture_app_snapshot(make_png(100, 100), app=APP)
    assert other.preview_url is not None and snap.preview_url is not None
    token = other.preview_url.split("cap=")[1]
    _assert_bare(http.get(f"{server.base_url}/snapshot/{snap.id}/preview?cap={token}"), 404)


def test_expiry_and_revocations(
    http: httpx.Client, service: SnapshotService, snap: SnapshotRecord, clock: Clock
) -> None:
    assert snap.preview_url is not None
    assert http.get(snap.preview_url).status_code == 200
    clock.advance(301)
    _assert_bare(http.get(snap.preview_url), 404)
    # renewal: a fresh link works again, until its turn ends
    renewed = service.issue_preview(snap.id, turn_id="turn-2", ttl_s=60)
    assert renewed.preview_url and renewed.preview_url != snap.preview_url
    assert http.get(renewed.preview_url).status_code == 200
    assert service.end_turn("turn-2") == 1
    _assert_bare(http.get(renewed.preview_url), 404)
    by_snapshot = service.issue_preview(snap.id)
    service.capabilities.revoke_snapshot(snap.id)
    _assert_bare(http.get(by_snapshot.preview_url or ""), 404)


def test_session_revocation_and_deleted_snapshot(
    http: httpx.Client, service: SnapshotService, db: Database, server: PreviewServer
) -> None:
    add_session(db, "s1")
    rec = service.capture_app_snapshot(make_png(300, 200), app=APP, session_id="s1")
    assert rec.preview_url and http.get(rec.preview_url).status_code == 200
    assert service.end_session("s1") == 1
    _assert_bare(http.get(rec.preview_url), 404)
    again = service.issue_preview(rec.id)
    assert again.preview_url and http.get(again.preview_url).status_code == 200
    service.delete(rec.id)
    _assert_bare(http.get(again.preview_url), 404)


def test_evidence_blobs_are_never_served(
    http: httpx.Client, service: SnapshotService, server: PreviewServer, db: Database
) -> None:
    Settings.update(db, full_recording_enabled=True)  # evidence frames are kept only then
    ev = service.record_evidence(make_png(300, 200), app=APP)
    assert ev is not None
    token, _ = service.capabilities.issue(ev.id)
    _assert_bare(http.get(f"{server.base_url}/snapshot/{ev.id}/preview?cap={token}"), 404)


def _plant(service: SnapshotService, vault: Vault, data: bytes, clock: Clock) -> str:
    """A snapshot whose image blob holds ``data`` — what a bug or an old format could leave."""
    sid, bid = "snap_planted", "blob_planted"
    sb = vault.put(data, blob_id=bid, kind="image")
    now = clock()
    service.repo.insert(
        SnapshotRow(sid, None, "app_snapshot", "manual", None, None, 1, 1, {}, now),
        [BlobRow(bid, sid, "image", sb.storage_key, sb.byte_length, "image/png", now, now)],
    )
    return sid


def test_non_image_bytes_415(
    http: httpx.Client, service: SnapshotService, vault: Vault, server: PreviewServer, clock: Clock
) -> None:
    sid = _plant(service, vault, b"<html><script>alert(1)</script></html>", clock)
    rec = service.issue_preview(sid)
    _assert_bare(http.get(rec.preview_url or ""), 415)


@pytest.mark.parametrize(
    ("data", "ctype"),
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
    ],
)
def test_content_type_is_sniffed(
    http: httpx.Client,
    service: SnapshotService,
    vault: Vault,
    server: PreviewServer,
    clock: Clock,
    data: bytes,
    ctype: str,
) -> None:
    sid = _plant(service, vault, data, clock)
    resp = http.get(service.issue_preview(sid).preview_url or "")
    assert resp.status_code == 200 and resp.headers["content-type"] == ctype
    assert resp.content == data


def test_tampered_blob_500_without_detail(
    http: httpx.Client, service: SnapshotService, vault: Vault, snap: SnapshotRecord
) -> None:
    blob = service.repo.blob(snap.id, "preview")
    assert blob is not None
    path = vault.path_for(blob.storage_key)
    raw = bytearray(path.read_bytes())
    raw[100] ^= 0xFF
    path.write_bytes(bytes(raw))
    resp = http.get(snap.preview_url or "")
    _assert_bare(resp, 500)


def test_missing_file_404(
    http: httpx.Client, service: SnapshotService, vault: Vault, snap: SnapshotRecord
) -> None:
    for blob in service.repo.blobs(snap.id):
        vault.remove(blob.storage_key)
    _assert_bare(http.get(snap.preview_url or ""), 404)


def test_fetch_counts_as_use_for_lru(
    http: httpx.Client, service: SnapshotService, snap: SnapshotRecord, clock: Clock
) -> None:
    before = service.repo.blob(snap.id, "preview")
    clock.advance(100)
    assert http.get(snap.preview_url or "").status_code == 200
    after = service.repo.blob(snap.id, "preview")
    assert before and after and after.last_access_at == before.last_access_at + 100


def test_listens_on_loopback_only(server: PreviewServer) -> None:
    assert server.base_url is not None and server.base_url.startswith("http://127.0.0.1:")


async def test_async_start(service: SnapshotService) -> None:
    srv = PreviewServer(service)
    base = await srv.start_async()
    rec = service.capture_app_snapshot(make_png(100, 80), app=APP)
    assert rec.preview_url and rec.preview_url.startswith(base)
    async with httpx.AsyncClient() as client:
        resp = await client.get(rec.preview_url)
    assert resp.status_code == 200
    await srv.stop_async()
    assert service.preview_base_url is None
