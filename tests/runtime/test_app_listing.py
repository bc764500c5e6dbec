"""list_apps groups the host's windows by pid; an app the host found silent (stopped, hung)
says so with ``unresponsiveMs`` — the longest of its windows' ``appUnresponsiveMs`` — and an
app that answered carries no such key (docs/mcp.md, "Tools")."""

from __future__ import annotations

from deskpilot.protocol.wire import AppIdentity, Rect, WindowInfo
from deskpilot.runtime.apps import group_apps


def _window(xid: str, pid: int, silent: float | None) -> WindowInfo:
    return WindowInfo(
        window_id=xid,
        bounds=Rect(x=0, y=0, width=10, height=10),
        app=AppIdentity(pid=pid, executable=f"app{pid}"),
        app_unresponsive_ms=silent,
    )


def test_a_silent_app_says_how_long_and_an_answering_one_says_nothing() -> None:
    windows = [_window("0x1", 7, 812.5), _window("0x2", 7, 900.0), _window("0x3", 8, None)]
    listed = {a.pid: a.to_json() for a in group_apps(windows)}
    assert listed[7]["unresponsiveMs"] == 900.0 and listed[7]["windows"] == 2
    assert "unresponsiveMs" not in listed[8]
    wire = windows[0].wire()
    assert wire["appUnresponsiveMs"] == 812.5  # list_windows shows it per window
    assert "appUnresponsiveMs" not in windows[2].wire()
