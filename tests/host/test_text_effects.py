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


def test_typing_over_a_selection_replaces_it_and_enter_is_a_key(host: HostProcess) -> None:
    """A person's typing replaces what is selected, and their Enter in a one-line field is a
    key (it submits), not a character. InsertText did neither: a trial's sentence selected
    in Writer to be replaced stayed, the new one beside it; Calc's Name Box got a literal new
    line and the result said confirmed."""
    argv = ["zenity", "--forms", "--title=Keys", "--add-entry=Name", "--add-entry=City"]
    zen = launch_accessible(argv, capture_stdout=True)
    try:
        obs = observe_until(host, {"pid": zen.pid}, r'textField "City"', "t1")
        city = line_id(obs["tree"], r'textField "City"')
        typed = _act(host, obs, {"kind": "type_text", "elementId": city, "text": "Paris"})
        assert typed["effect"] == "confirmed", typed
        obs = typed["observation"]
        chosen = _act(host, obs, {"kind": "select_text", "elementId": city, "start": 0, "end": 2})
        obs = chosen["observation"]
        over = _act(host, obs, {"kind": "type_text", "elementId": city, "text": "Lo"})
        assert over["effect"] == "confirmed", over
        assert over["method"] != "semantic", over  # typed as keys, over the selection
        obs = over["observation"]
        assert re.search(r'textField "City" = "Loris"', obs["tree"]), obs["tree"]
        name = line_id(obs["tree"], r'textField "Name"')
        entered = _act(host, obs, {"kind": "type_text", "elementId": name, "text": "Ada\n"})
        # Enter went as a key, not as a character of the name (which is all that stays)
        assert entered["effect"] == "confirmed", entered
        obs = entered["observation"]
        ok = _act(host, obs, {"kind": "click", "elementId": line_id(obs["tree"], 'button "OK"')})
        assert ok["type"] == "action_result"
        out, _ = zen.proc.communicate(timeout=10)
        assert out.decode() == "Ada|Loris\n"
    finally:
        zen.stop()
