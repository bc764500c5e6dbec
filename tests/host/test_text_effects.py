"""Text into a GTK 3 field is read back and said so (``effect``), whatever way it went in:
EditableText where the app does what it answers (GTK 3 does), the count alone for a
secure field, and the app's own output at the end (zenity prints what its fields hold).
Firefox, whose EditableText changes nothing, is test_atspi_firefox.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
from host_harness import HostProcess, launch_accessible, line_id, observe_until

pytestmark = pytest.mark.desktop


def _act(host: HostProcess, obs: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    response, _ = host.request(
        {
            "type": "execute_action",
            "sessionId": "t1",
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": action,
            "observeAfter": True,
        }
    )
    assert response["type"] == "action_result", response
    return response


def test_text_into_gtk_fields_is_read_back(host: HostProcess) -> None:
    argv = ["zenity", "--forms", "--title=Effects", "--add-entry=Name", "--add-entry=City"]
    zen = launch_accessible([*argv, "--add-password=PIN"], capture_stdout=True)
    try:
        obs = observe_until(host, {"pid": zen.pid}, r'passwordField "PIN"', "t1")
        name = line_id(obs["tree"], r'textField "Name"')
        typed = _act(host, obs, {"kind": "type_text", "elementId": name, "text": "Ada"})
        assert typed["method"] == "semantic" and typed["detail"] == "EditableText.InsertText"
        assert (typed["effect"], typed.get("effectNote")) == ("confirmed", None), typed
        obs = typed["observation"]
        city = line_id(obs["tree"], r'textField "City"')
        typed = _act(host, obs, {"kind": "type_text", "elementId": city, "text": "Paris"})
        assert typed["effect"] == "confirmed", typed
        obs = typed["observation"]
        done = _act(host, obs, {"kind": "set_value", "elementId": city, "value": "Rome"})
        assert done["detail"] == "EditableText.SetTextContents" and done["effect"] == "confirmed"
        obs = done["observation"]
        assert re.search(r'textField "City" = "Rome"', obs["tree"]), obs["tree"]
        pin = line_id(obs["tree"], r'passwordField "PIN"')
        secret = _act(host, obs, {"kind": "type_text", "elementId": pin, "text": "s3cret"})
        assert secret["effect"] == "confirmed" and "s3cret" not in str(secret), secret
        obs = secret["observation"]
        ok = _act(host, obs, {"kind": "click", "elementId": line_id(obs["tree"], 'button "OK"')})
        assert ok["type"] == "action_result"
        out, _ = zen.proc.communicate(timeout=10)
        assert out.decode() == "Ada|Rome|s3cret\n"
    finally:
        zen.stop()
