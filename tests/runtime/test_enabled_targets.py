"""A disabled element is refused before anything is sent, decided on the rendered tree."""

from __future__ import annotations

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.runtime.enabled_targets import check_enabled

TREE = """\
- window "Form" [1]
  - textField "Name" = "" [disabled] [2]
  - button "Delete all" [disabled] [3]
  - button "Save" [4]
  - checkBox "Agree" [5]"""


def test_a_disabled_element_is_refused_with_its_id_and_role_only() -> None:
    for element_id, role in ((3, "button"), (2, "textField")):
        with pytest.raises(DeskpilotError) as err:
            check_enabled(TREE, element_id, "click")
        exc = err.value
        assert exc.code is ErrorCode.UNSUPPORTED_ACTION
        assert exc.details == {"reason": "disabled", "elementId": element_id, "role": role}
        assert f"Element {element_id} ({role}) is disabled: click on it" in exc.message
        assert "state_id is still valid" in exc.message
        assert "Delete" not in exc.message and "Name" not in exc.message  # no UI text


def test_enabled_elements_and_unknown_ids_pass() -> None:
    for element_id in (1, 4, 5, 99):
        check_enabled(TREE, element_id, "invoke_element")
